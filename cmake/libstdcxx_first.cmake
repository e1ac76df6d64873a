# Note [libstdc++ before LibTorch]
# pip's LibTorch wheels (torch 2.5 and later, pytorch/pytorch#133437) export
# from libtorch_cpu.so a copy of libstdc++'s std::filesystem that was linked
# into them statically. The dynamic loader binds each symbol to the first
# object in the executable's search order that defines it, and an unversioned
# definition also satisfies a versioned reference such as
# remove_all@GLIBCXX_3.4.26. The linker records the executable's DT_NEEDED
# entries in command-line order and g++ adds -lstdc++ last, so libtorch_cpu.so
# came first: bnn's std::filesystem::remove_all bound to the wheel's copy and
# crashed on an H100 machine (torch 2.11.0+cu130, g++ 13.3).
#
# Naming libstdc++ before the objects, outside --as-needed, makes it the first
# library the loader searches, so every std:: symbol binds to the system's
# libstdc++ (the newest on the machine, which the wheel's copy must be
# compatible with anyway). tests/support/link_order_probe.cpp checks this
# with a library that exports its own remove_all, linked like libtorch_cpu.so.
option(BNN_LIBSTDCXX_FIRST "Search libstdc++ before LibTorch for std:: symbols (see cmake/libstdcxx_first.cmake)" ON)
set(BNN_LIBSTDCXX_FIRST_FLAGS "")
if(BNN_LIBSTDCXX_FIRST AND CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # One SHELL: item, so that CMake's de-duplication of link options keeps
  # the push/pop pair around -lstdc++.
  set(BNN_LIBSTDCXX_FIRST_FLAGS "SHELL:-Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
  add_link_options("${BNN_LIBSTDCXX_FIRST_FLAGS}")
endif()
message(STATUS "bnn: libstdc++ searched before LibTorch: ${BNN_LIBSTDCXX_FIRST_FLAGS}")
