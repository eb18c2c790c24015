// Built against an installed libwaitfor (CMake package or pkg-config):
// one wait with a C++ probe, one profile definition. Prints "consumer ok".
#include <waitfor.hpp>

#include <cstdio>

int main() {
    auto result = waitfor::Result::parse(waitfor::wait(
        R"({"until": {"matches": "ready"}, "interval_ms": 10, "max_wait_ms": 10000})",
        [](const waitfor::ProbeContext &ctx) {
            return waitfor::Observation::of_text(ctx.sample() < 2 ? "starting" : "ready");
        }));
    bool ok = result.outcome == "matched" && waitfor::abi_version() == WAITFOR_ABI_VERSION &&
              waitfor::tool_definitions().find("wait_for") != std::string::npos;
    std::printf("%s\n", ok ? "consumer ok" : "consumer FAILED");
    return ok ? 0 : 1;
}
