# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
# install.cmake - run by `cmake --install` (the top CMakeLists passes the
# SL_* variables): installs the files that name install paths, with the
# prefix of this install (CMAKE_INSTALL_PREFIX here is the one given to
# `cmake --install --prefix`, or the configured one), so they are right
# whichever prefix `make install PREFIX=...` asks for:
#   sluice.pc        prefix, libdir, includedir
#   sluiced.service  ExecStart=BINDIR/sluiced -c SYSCONFDIR/sluice/sluice.yaml
#   sluice.yaml      into SYSCONFDIR/sluice, unless one is there already
# SYSCONFDIR is /etc for the prefix /usr (as GNUInstallDirs has it), else
# PREFIX/etc; an absolute CMAKE_INSTALL_SYSCONFDIR is taken as it is.
set(prefix "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "(.)/+$" "\\1" prefix "${prefix}")

function(sl_full out rel)
  if(IS_ABSOLUTE "${rel}")
    set(${out} "${rel}" PARENT_SCOPE)
  else()
    set(${out} "${prefix}/${rel}" PARENT_SCOPE)
  endif()
endfunction()

sl_full(bindir "${SL_BINDIR}")
if(IS_ABSOLUTE "${SL_SYSCONFDIR}")
  set(sysconfdir "${SL_SYSCONFDIR}")
elseif(prefix STREQUAL "/usr" OR prefix STREQUAL "/")
  set(sysconfdir "/${SL_SYSCONFDIR}")
else()
  set(sysconfdir "${prefix}/${SL_SYSCONFDIR}")
endif()
if(SL_SYSTEMD_UNITDIR)
  set(unitdir "${SL_SYSTEMD_UNITDIR}")
else()
  set(unitdir "${prefix}/lib/systemd/system")
endif()

# sluice.pc: paths below the prefix are written relative to ${prefix}.
set(SL_PREFIX "${prefix}")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${SL_${kind}}")
    set(SL_PC_${kind} "${SL_${kind}}")
  else()
    set(SL_PC_${kind} "\${prefix}/${SL_${kind}}")
  endif()
endforeach()
sl_full(libdir "${SL_LIBDIR}")

set(gen "${SL_BINARY_DIR}/install-paths")
file(MAKE_DIRECTORY "${gen}")
configure_file("${SL_SOURCE_DIR}/sluice.pc.in" "${gen}/sluice.pc" @ONLY)
file(INSTALL DESTINATION "${libdir}/pkgconfig" TYPE FILE FILES "${gen}/sluice.pc")

set(SL_BINDIR "${bindir}")
set(SL_SYSCONFDIR "${sysconfdir}")
configure_file("${SL_SOURCE_DIR}/dist/sluiced.service.in" "${gen}/sluiced.service" @ONLY)
file(INSTALL DESTINATION "${unitdir}" TYPE FILE FILES "${gen}/sluiced.service")

# The configuration is the administrator's once installed: never overwritten.
if(EXISTS "$ENV{DESTDIR}${sysconfdir}/sluice/sluice.yaml")
  message(STATUS "Keeping: $ENV{DESTDIR}${sysconfdir}/sluice/sluice.yaml")
else()
  file(INSTALL DESTINATION "${sysconfdir}/sluice" TYPE FILE
       FILES "${SL_SOURCE_DIR}/dist/sluice.yaml")
endif()
