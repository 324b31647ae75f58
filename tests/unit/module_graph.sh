#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/unit/module_graph.sh: libdlpar's modules depend on each other one
# way, with no circle. The graph is read from the compiled objects of
# libdlpar_core (one object per .c file), not from the text: a module uses
# another when it names a symbol the other defines. A circle fails the
# test, printed as "a -> b -> a" with the file names, so the one who adds
# it sees which call closes it.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
archive="$B/libdlpar/.libs/libdlpar_core.a"
[ -e "$archive" ] || skip "libdlpar is not built here (configure found no PMIx)"

# "user used" for every global symbol an object names and another defines.
edges=$(nm -A "$archive" | awk '
  { object = $1; sub(/:[^:]*$/, "", object); sub(/^.*:/, "", object)
    sub(/^libdlpar_core_la-/, "", object); sub(/\.o$/, "", object) }
  $(NF - 1) ~ /^[TDBRC]$/ { owner[$NF] = object }
  $(NF - 1) == "U" { wanted[object, $NF] = 1 }
  END { for (pair in wanted) { split(pair, p, SUBSEP)
          if ((p[2] in owner) && owner[p[2]] != p[1]) print p[1], owner[p[2]] } }' | sort -u)
[ -n "$edges" ] || fail "no edges read from $archive: the test would check nothing"

# find_circle: "user used" lines in, the first circle out ("" if none),
# starting from the modules in the order they come. A depth-first search: a module met again while it is still on the path
# closes a circle, printed from that module round to itself.
find_circle() {
  awk '
    { uses[$1] = uses[$1] " " $2
      for (k = 1; k <= 2; k++) if (!($k in seen)) { seen[$k]; order[++count_all] = $k } }
    function visit(module,    used, count, i, j) {
      state[module] = "open"; path_of[++depth] = module
      count = split(uses[module], used, " ")
      for (i = 1; i <= count && !circle; i++) {
        if (state[used[i]] == "open") {
          for (j = 1; path_of[j] != used[i]; j++) ;
          for (; j <= depth; j++) circle = circle path_of[j] ".c -> "
          circle = circle used[i] ".c"
        } else if (!state[used[i]])
          visit(used[i])
      }
      state[module] = "done"; depth--
    }
    END { for (k = 1; k <= count_all && !circle; k++) if (!state[order[k]]) visit(order[k]); print circle }'
}

# The search itself finds a circle: the one this test was written against.
expect_eq "the search finds a known circle" \
  "$(printf '%s\n' 'end_step pmixboot' 'pmixboot rendezvous_diagnosis' 'rendezvous_diagnosis end_step' | find_circle)" \
  "end_step.c -> pmixboot.c -> rendezvous_diagnosis.c -> end_step.c"
expect_eq "a circle among libdlpar's modules" "$(printf '%s\n' "$edges" | find_circle)" ""
finish
