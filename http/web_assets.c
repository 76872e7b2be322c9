/* The web viewer's files (http/web/), compiled into the binary: the
 * assembler copies each file's bytes into .rodata (.incbin, a path from the
 * top of the tree, where make runs), between a start and an end label, so
 * the page needs nothing at run time, not even the files of the tree it
 * was built from. The Makefile makes this object depend on the files of
 * http/web, so editing one rebuilds it. Served by http/web.c. */
#include "http/internal.h"

#define WEB_ASSET(sym, file)                                                                       \
  __asm__(".section .rodata\n"                                                                     \
          ".balign 16\n"                                                                           \
          ".globl " #sym "_start\n"                                                                \
          ".hidden " #sym "_start\n"                                                               \
          ".globl " #sym "_end\n"                                                                  \
          ".hidden " #sym "_end\n" #sym "_start:\n"                                                \
          ".incbin \"" file "\"\n" #sym "_end:\n"                                                  \
          ".byte 0\n"                                                                              \
          ".previous\n")

WEB_ASSET(http_web_index_html, "http/web/index.html");
WEB_ASSET(http_web_app_js, "http/web/app.js");
WEB_ASSET(http_web_style_css, "http/web/style.css");
