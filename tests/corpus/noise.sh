#!/bin/sh
# Prints LINES (default 60000) lines of the progress output a tool of the
# given STYLE prints while it works: what buries a failure in a long log.
# None of these lines is an error, a failure or a warning. The corpus test
# (tests/mcp/corpus.test.mjs) and bench/corpus.sh print it after a case's
# output; awk keeps 60,000 lines well under a tenth of a second.
#
# Usage: noise.sh STYLE [LINES]
# STYLE: build ninja cargo go npm pip pytest maven gradle dotnet docker log
style=${1:-build}
lines=${2:-60000}
exec awk -v style="$style" -v n="$lines" 'BEGIN {
  srand(14)
  for (i = 1; i <= n; i++) {
    id = sprintf("%05d", i)
    pct = int(i * 100 / n)
    r = int(rand() * 1000)
    if (style == "build")
      printf "[%3d%%] Building C object src/CMakeFiles/metricsd.dir/gen/module_%s.c.o\n", pct, id
    else if (style == "ninja")
      printf "[%d/%d] Building CXX object CMakeFiles/geo.dir/src/gen/tile_%s.cpp.o\n", i, n, id
    else if (style == "cargo")
      printf "   Compiling tile-%s v0.%d.%d\n", id, r % 20, r % 7
    else if (style == "go")
      printf "go: downloading example.com/vendor/mod%s v1.%d.%d\n", id, r % 30, r % 9
    else if (style == "npm") {
      if (i % 3 == 0)
        printf "asset chunk-%s.%08x.js %d.%d KiB [emitted] [immutable] [minimized] (name: chunk-%s)\n", id, r * 7919 + i, r % 300, r % 10, id
      else
        printf "transforming (%d) src/components/generated/Widget%s.tsx\n", i, id
    } else if (style == "pip") {
      if (i % 2)
        printf "Collecting pkg-%s==1.%d.%d\n", id, r % 40, r % 9
      else
        printf "  Downloading pkg_%s-1.%d.%d-py3-none-any.whl (%d kB)\n", id, r % 40, r % 9, r
    } else if (style == "pytest")
      printf "tests/generated/test_case_%s.py ..........................................     [%3d%%]\n", id, pct
    else if (style == "maven")
      printf "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/com/acme/lib%s/1.%d.0/lib%s-1.%d.0.jar (%d kB at %d kB/s)\n", id, r % 12, id, r % 12, r % 90 + 3, r + 200
    else if (style == "gradle")
      printf "> Task :module%s:compileJava UP-TO-DATE\n", id
    else if (style == "dotnet")
      printf "  Shop.Module%s -> /src/Shop.Module%s/bin/Release/net8.0/Shop.Module%s.dll\n", id, id, id
    else if (style == "docker")
      printf "#12 %d.%03d Unpacking libmod%s:amd64 (1.%d.%d-1) ...\n", int(i / 500), r, id, r % 12, r % 5
    else
      printf "2026-11-30T08:%02d:%02d.%03dZ INFO  [worker-%d] batch %s processed: %d rows in %d ms\n", int(i / 3600) % 60, int(i / 60) % 60, r, r % 4, id, r + 1, r % 90 + 1
  }
}'
