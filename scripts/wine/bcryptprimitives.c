/* ProcessPrng, which Rust's standard library calls for random bytes on
 * Windows (since Rust 1.78) from bcryptprimitives.dll. Windows 10 and later
 * have it; the Wine of Debian 12 (8.0) does not, so a test binary would not
 * load there. Built with mingw into the test's Wine prefix only; never part
 * of a release. */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    return BCryptGenRandom(NULL, data, (ULONG)len, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0;
}
