# find_package(waitfor) for an installed libwaitfor (see ffi/Makefile).
#
#   waitfor::waitfor         the shared library (no SONAME: CMake links it as
#                            -lwaitfor and puts its directory in the build rpath)
#   waitfor::waitfor_static  the static library, with the system libraries it needs
include(CMakeFindDependencyMacro)
find_dependency(Threads)

get_filename_component(_waitfor_libdir "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
get_filename_component(_waitfor_includedir "${_waitfor_libdir}/../include" ABSOLUTE)

if(NOT TARGET waitfor::waitfor)
  add_library(waitfor::waitfor SHARED IMPORTED)
  set_target_properties(waitfor::waitfor PROPERTIES
    IMPORTED_LOCATION "${_waitfor_libdir}/libwaitfor.so"
    IMPORTED_NO_SONAME TRUE
    INTERFACE_INCLUDE_DIRECTORIES "${_waitfor_includedir}")
endif()

if(NOT TARGET waitfor::waitfor_static)
  add_library(waitfor::waitfor_static STATIC IMPORTED)
  set_target_properties(waitfor::waitfor_static PROPERTIES
    IMPORTED_LOCATION "${_waitfor_libdir}/libwaitfor.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_waitfor_includedir}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
endif()

unset(_waitfor_libdir)
unset(_waitfor_includedir)
set(waitfor_FOUND TRUE)
