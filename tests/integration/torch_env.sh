#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/integration/torch_env.sh: unchanged PyTorch programs under
# srun --dl-parallel on the 2-node bed, with no env lines (the env://
# contract, common/torchenv.h): the tutorial's train.py initialisation
# (env://, its tp/dp new_group pair, DDP) and CS336 lecture 8's collectives
# and hand-written data-parallel step, values checked, on 1x4 and 2x2 over 2
# nodes x 2 tasks and 4x1 inside a node; the contract's values exactly
# (MASTER_ADDR: n1's NodeAddr; MASTER_PORT: the step's reserved port, else
# the derived one, by the plugin's mixing function; GROUP_RANK/NODE_RANK;
# GLOO_SOCKET_IFNAME); --resv-ports=1; two steps of one job at once;
# MASTER_PORT set by the user; --dl-env=none; no --dl-parallel: nothing; a
# busy derived port (a stand-in for another job's store, the job's own
# user's, holds it): under --dl-env=torch the whole step ends, no task gets
# to run the program and nobody connects to it, under the default one
# warning and the program runs; the same port held by another user
# (nobody, in n1's namespace): the step ends under either --dl-env, in one
# line, before any task runs (none touches its file) and nobody connects;
# -m arbitrary refused by srun; the same programs under dlpar-run.
# And dlpar's Python module (python/dlpar/torch.py): its groups value by
# value on the same grids, a rank that never joins named within the
# timeout (a DlparError: finally blocks run), share_from_root from four
# threads, a loopback rank 0 address refused on two nodes (fine on one),
# rank 0 off the first node under --dl-env=none, its installed form.
. "$DLPAR_SRCDIR/tests/lib/common.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  skip "no PyTorch for /usr/bin/python3 (apt-get install python3-torch)"
use_bed
prog="/usr/bin/python3 $DLPAR_SRCDIR/tests/integration/torch/env_programs.py"
torch_env_without_libuv # Debian 13's torch (tests/lib/common.sh)

# expect_ok WHAT OUTPUT RANKS CHECKS_PER_RANK: every rank printed its checks ok, none failed
expect_ok() {
  local r
  for ((r = 0; r < $3; r++)); do
    expect_eq "$1: rank $r's checks" "$(grep -c "^rank $r: .* ok" <<<"$2")" "$4"
  done
  expect_eq "$1: no check failed" "$(grep -c FAILED <<<"$2")" 0
}

for grid in 1x4 2x2; do
  out=$(srun -N2 --ntasks-per-node=2 --dl-parallel=$grid $prog tutorial "${grid%x*}" 2>&1)
  expect_rc "tutorial on $grid" $? 0
  expect_ok "tutorial on $grid" "$out" 4 3
  out=$(srun -N2 --ntasks-per-node=2 --dl-parallel=$grid $prog lecture8 2>&1)
  expect_rc "lecture8 on $grid" $? 0
  expect_ok "lecture8 on $grid" "$out" 4 4
done
out=$(srun -N1 -n4 --dl-parallel=4x1 $prog tutorial 4 2>&1)
expect_rc "tutorial on 4x1 inside a node" $? 0
expect_ok "tutorial on 4x1 inside a node" "$out" 4 3

# The contract's values: every task the same MASTER_ADDR/PORT, n1's address, the reserved port
n1_addr=$(scontrol show node n1 | sed -n 's/.*NodeAddr=\([^ ]*\).*/\1/p')
out=$(srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 bash -c 'echo "$SLURM_PROCID|$SLURM_STEP_RESV_PORTS"; '"$prog env" 2>&1)
expect_rc "env on 2x2" $? 0
port=$(sed -n 's/^0|\([0-9]*\).*/\1/p' <<<"$out")
for r in 0 1 2 3; do
  line=$(grep "^task $r: env" <<<"$out")
  expect_contains "2x2 rank $r" "$line" \
    "RANK=$r LOCAL_RANK=$((r % 2)) WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=$((r / 2)) NODE_RANK=$((r / 2)) MASTER_ADDR=$n1_addr MASTER_PORT=$port GLOO_SOCKET_IFNAME="
  ifname=$(sed -n 's/.*GLOO_SOCKET_IFNAME=\([^ ]*\).*/\1/p' <<<"$line")
  TEST_CHECKS=$((TEST_CHECKS + 1))
  [ -n "$ifname" ] && [ "$ifname" != - ] && [ "$ifname" != lo ] || fail "2x2 rank $r: GLOO_SOCKET_IFNAME '$ifname', expected the node's interface"
done

# --resv-ports=1 (what the busy-port line advises; the bed has MpiParams=ports): the step's first reserved port
out=$(srun -N2 --ntasks-per-node=2 --resv-ports=1 --dl-parallel=2x2 bash -c 'echo "$SLURM_PROCID|$SLURM_STEP_RESV_PORTS|$MASTER_PORT"' 2>&1)
expect_rc "--resv-ports=1" $? 0
line=$(grep '^0|' <<<"$out")
reserved=$(cut -d'|' -f2 <<<"$line")
expect_eq "--resv-ports=1: MASTER_PORT is the first reserved port" "$(cut -d'|' -f3 <<<"$line")" "${reserved%%[-,]*}"
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -n "$reserved" ] || fail "--resv-ports=1: no reserved port: $out"

# No reserved ports: the port derived from job and step, inside the admin's
# range: the plugin's mixing function, restated (torch_ports' default range)
cat >"$TEST_TMP/derived_port" <<'EOF2'
#!/usr/bin/python3
import sys
job, step = int(sys.argv[1]), int(sys.argv[2])
x, mask = job, (1 << 64) - 1
x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & mask
x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & mask
x ^= x >> 31
print(20000 + (x % 9400 + step) % 9400)
EOF2
chmod +x "$TEST_TMP/derived_port"
out=$(srun -N2 --ntasks-per-node=2 --resv-ports=0 --dl-parallel=2x2 $prog env 2>&1)
line=$(grep "^task 0: env" <<<"$out")
job=$(sed -n 's/.*SLURM_JOB_ID=\([0-9]*\).*/\1/p' <<<"$line")
step=$(sed -n 's/.*SLURM_STEP_ID=\([0-9]*\).*/\1/p' <<<"$line")
expect_contains "derived port" "$line" "MASTER_PORT=$("$TEST_TMP/derived_port" "$job" "$step")"

# Two steps of one job at once on the same nodes: different ports, both right
with_port="echo \"\$SLURM_PROCID port \$MASTER_PORT\"; exec $prog tutorial 2"
out=$(salloc -N2 --ntasks-per-node=4 bash -c "
  srun --overlap -N2 -n4 --ntasks-per-node=2 --resv-ports=0 --dl-parallel=2x2 bash -c '$with_port' >$TEST_TMP/a.out 2>&1 &
  srun --overlap -N2 -n4 --ntasks-per-node=2 --resv-ports=0 --dl-parallel=2x2 bash -c '$with_port' >$TEST_TMP/b.out 2>&1
  b=\$?; wait \$!; echo steps \$? \$b" 2>&1)
expect_contains "two steps at once" "$out" "steps 0 0"
expect_ok "two steps at once: the first" "$(cat "$TEST_TMP/a.out")" 4 3
expect_ok "two steps at once: the second" "$(cat "$TEST_TMP/b.out")" 4 3
port_a=$(sed -n 's/^0 port //p' "$TEST_TMP/a.out")
port_b=$(sed -n 's/^0 port //p' "$TEST_TMP/b.out")
TEST_CHECKS=$((TEST_CHECKS + 1))
[ -n "$port_a" ] && [ "$port_a" != "$port_b" ] || fail "two steps at once: ports '$port_a' and '$port_b', expected two"

# A MASTER_PORT the user exported wins, said once by srun
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
out=$(MASTER_PORT=$port srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 bash -c "$with_port" 2>&1)
expect_rc "MASTER_PORT=$port by the user" $? 0
expect_ok "MASTER_PORT=$port by the user" "$out" 4 3
expect_eq "MASTER_PORT=$port by the user: every task's" "$(grep -c "^[0-3] port $port\$" <<<"$out")" 4
expect_eq "MASTER_PORT=$port by the user: said once" \
  "$(grep -c "dlpar: keeping your exported MASTER_PORT=$port for every task" <<<"$out")" 1

# --dl-env=none: none of the torch names; no --dl-parallel: nothing changes
none="RANK=- LOCAL_RANK=- WORLD_SIZE=- LOCAL_WORLD_SIZE=- GROUP_RANK=- NODE_RANK=- MASTER_ADDR=- MASTER_PORT=- GLOO_SOCKET_IFNAME=-"
out=$(srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 --dl-env=none $prog env 2>&1)
expect_eq "--dl-env=none" "$(grep -c "env $none" <<<"$out")" 4
out=$(srun -N2 --ntasks-per-node=2 $prog env 2>&1)
expect_eq "no --dl-parallel" "$(grep -c "env $none" <<<"$out")" 4
out=$(srun -n2 --dl-parallel=1x2 --dl-env=torchrun true 2>&1)
expect_rc "--dl-env=torchrun" $? 1
expect_contains "--dl-env=torchrun" "$out" "dlpar: --dl-env=torchrun: expected torch (export MASTER_ADDR"

# A busy derived port on rank 0's node (n1), held by a stand-in for another
# job's TCPStore that logs who connects. Step 0 of a job holds the port its
# step 1 derives; step 1 is the --dl-parallel one.
cat >"$TEST_TMP/foreign_store.py" <<'EOF2'
import socket, sys, time
port, held, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.bind(("", port))
s.listen(16)
s.settimeout(0.2)
open(held, "w").write(str(port))
end = time.time() + 60
while time.time() < end:
    try:
        conn, peer = s.accept()
    except socket.timeout:
        continue
    open(log, "a").write(f"connection from {peer[0]}\n")
    conn.close()
EOF2
busy_step() { # NAME, then step 1's srun arguments: its output in $TEST_TMP/NAME.out, the step's status on its last line
  local name=$1
  shift
  timeout 120 salloc -N2 --ntasks-per-node=2 bash -c "
    port=\$($TEST_TMP/derived_port \$SLURM_JOB_ID 1)
    srun --overlap -w n1 -N1 -n1 /usr/bin/python3 $TEST_TMP/foreign_store.py \$port $TEST_TMP/$name.held $TEST_TMP/$name.connections &
    for i in \$(seq 100); do [ -s $TEST_TMP/$name.held ] && break; sleep 0.2; done
    srun --overlap -N2 --ntasks-per-node=2 --resv-ports=0 $*
    echo step \$?; kill %1" >"$TEST_TMP/$name.out" 2>&1
}
# Under an explicit --dl-env=torch: the whole step ends before the program
# gets anywhere: n1 refuses before it forks a task, n2's tasks wait for
# n1's and end (before, the step ended on n1 alone and n2's ranks joined
# the foreign store; later n2's ranks ran briefly until a kill reached them).
busy_step explicit --dl-parallel=2x2 --dl-env=torch "$prog" tutorial 2
out=$(cat "$TEST_TMP/explicit.out")
held=$(cat "$TEST_TMP/explicit.held" 2>/dev/null)
expect_eq "a busy port, --dl-env=torch: the refusal, once" "$(grep -c "dlpar: MASTER_PORT $held (derived from job and step) is in use on n1, where rank 0 runs: ending the step (run srun with --resv-ports=1 so Slurm reserves a port per step, which needs MpiParams=ports in slurm.conf, or export MASTER_PORT)" <<<"$out")" 1
TEST_CHECKS=$((TEST_CHECKS + 1))
grep -q "^step [1-9]" <<<"$out" || fail "a busy port, --dl-env=torch: the step did not fail: $out"
expect_eq "a busy port, --dl-env=torch: no task got to run the program" "$(grep -c '^rank [0-3]:' <<<"$out")" 0
expect_eq "a busy port, --dl-env=torch: nobody connected to the foreign store" \
  "$(cat "$TEST_TMP/explicit.connections" 2>/dev/null)" "" || echo "$out" >&2
# Under the default --dl-env: one warning, and a program that does not use env:// runs
busy_step default --dl-parallel=2x2 "$prog" env
out=$(cat "$TEST_TMP/default.out")
held=$(cat "$TEST_TMP/default.held" 2>/dev/null)
expect_eq "a busy port, default --dl-env: one warning" "$(grep -c "dlpar: MASTER_PORT $held (derived from job and step) is in use on n1, where rank 0 runs: env:// cannot open its store there, programs that do not use it run on" <<<"$out")" 1
expect_contains "a busy port, default --dl-env: the step runs" "$out" "step 0"
expect_eq "a busy port, default --dl-env: every task ran" "$(grep -c "^task [0-3]: env .*MASTER_PORT=$held " <<<"$out")" 4

# Another user (nobody) listens on the derived port in n1's namespace before
# the step starts: whatever --dl-env says, n1 refuses it in one line before
# it forks a task, and n2's tasks wait for n1's, so no task runs the
# program (each would touch a file first) and nobody connects to the
# squatter (before, both ranks got that MASTER_PORT and rank 1 read the
# squatter's bytes). The squatter prints what it sees to its own output.
cat >"$TEST_TMP/squatter.py" <<'EOF2'
import socket, sys, time
s = socket.socket()
s.bind(("", int(sys.argv[1])))
s.listen(16)
s.settimeout(0.2)
print("held", flush=True)
end = time.time() + 60
while time.time() < end:
    try:
        conn, peer = s.accept()
    except socket.timeout:
        continue
    print(f"connection from {peer[0]}", flush=True)
    conn.close()
EOF2
chmod go+x "$TEST_TMP" # nobody reads its program there
chmod go+r "$TEST_TMP/squatter.py"
squatted_step() { # NAME, then step 1's srun arguments: as busy_step, the squatter's output in $TEST_TMP/NAME.squatter
  local name=$1
  shift
  mkdir -p "$TEST_TMP/$name.ran"
  timeout 120 salloc -N2 --ntasks-per-node=2 bash -c "
    port=\$($TEST_TMP/derived_port \$SLURM_JOB_ID 1)
    echo port \$port
    srun --overlap -w n1 -N1 -n1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
      /usr/bin/python3 $TEST_TMP/squatter.py \$port >$TEST_TMP/$name.squatter 2>&1 &
    for i in \$(seq 100); do grep -q held $TEST_TMP/$name.squatter 2>/dev/null && break; sleep 0.2; done
    srun --overlap -N2 --ntasks-per-node=2 --resv-ports=0 $* bash -c 'touch $TEST_TMP/$name.ran/\$SLURM_PROCID; exec $prog tutorial 2'
    echo step \$?; kill %1" >"$TEST_TMP/$name.out" 2>&1
}
for env in default torch; do
  name=squat_$env
  squatted_step $name --dl-parallel=2x2 $([ $env = torch ] && echo --dl-env=torch)
  out=$(cat "$TEST_TMP/$name.out")
  held=$(sed -n 's/^port //p' <<<"$out")
  expect_eq "a port another user holds, --dl-env $env: the squatter held it" "$(grep -c '^held$' "$TEST_TMP/$name.squatter")" 1
  expect_eq "a port another user holds, --dl-env $env: the refusal, once" "$(grep -c "dlpar: MASTER_PORT $held (derived from job and step) is held on n1, where rank 0 runs, by another user (uid $(id -u nobody)): ending the step before any task starts, so no rank connects to it (run srun with --resv-ports=1 so Slurm reserves a port per step, which needs MpiParams=ports in slurm.conf; or --dl-env=none, with dlpar.torch.init_process_group() for torch.distributed, which needs no port)" <<<"$out")" 1
  expect_eq "a port another user holds, --dl-env $env: dlpar said one line" "$(grep -c 'dlpar:' <<<"$out")" 1
  TEST_CHECKS=$((TEST_CHECKS + 1))
  grep -q "^step [1-9]" <<<"$out" || fail "a port another user holds, --dl-env $env: the step did not fail: $out"
  expect_eq "a port another user holds, --dl-env $env: no task ran" "$(ls "$TEST_TMP/$name.ran" | tr '\n' ' ')" ""
  expect_eq "a port another user holds, --dl-env $env: nobody connected to the squatter" \
    "$(grep -c '^connection from' "$TEST_TMP/$name.squatter")" 0 || echo "$out" >&2
done

# The dlpar module: dlpar.torch.init_process_group() with no port and no
# MASTER_ADDR (rank 0's TCPStore address travels over PMIx), its world, tp
# and dp groups checked value by value on each grid; under dlpar-run too.
module="env PYTHONPATH=$DLPAR_SRCDIR/python DLPAR_LIBRARY=$B/libdlpar/.libs/libdlpar.so /usr/bin/python3 $DLPAR_SRCDIR/tests/integration/torch/module_program.py"
# Checks per rank: the grid, three allreduces; with a DeviceMesh (torch 2.4+) its shape and two more.
module_checks=4
/usr/bin/python3 -c 'from torch.distributed.device_mesh import DeviceMesh; assert hasattr(DeviceMesh, "from_group")' \
  2>/dev/null && module_checks=7
for run in "-N2 --ntasks-per-node=2 --dl-parallel=1x4" "-N2 --ntasks-per-node=2 --dl-parallel=2x2" \
           "-N1 -n4 --dl-parallel=4x1" "-N2 --ntasks-per-node=2 --dl-parallel=2x2 --dl-env=none"; do
  out=$(srun $run $module 2>&1)
  expect_rc "dlpar module, srun $run" $? 0
  expect_ok "dlpar module, srun $run" "$out" 4 $module_checks
done
out=$("$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- $module 2>&1)
expect_rc "dlpar module under dlpar-run" $? 0
expect_ok "dlpar module under dlpar-run" "$out" 4 $module_checks
# A rank that leaves before it joins: named with its host on a rank that waited, within the timeout
# (the others would wait for ever: a step still running after 100 s hangs); the timeout raises
# DlparError, so the program's finally blocks run (on the rank that then ends the step at least)
out=$(DLPAR_TEST_LEAVE=3 DLPAR_RENDEZVOUS_TIMEOUT=5 timeout 100 srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 $module 2>&1)
expect_rc "dlpar module, rank 3 leaves" $? 1
expect_contains "dlpar module, rank 3 leaves" "$out" "rendezvous timed out after 5 s: rank 3 (n2) did not arrive"
expect_contains "dlpar module, rank 3 leaves: DlparError" "$out" "dlpar.DlparError: rank 2 on n2: rendezvous timed out after 5 s: rank 3 (n2) did not arrive"
TEST_CHECKS=$((TEST_CHECKS + 1))
grep -q '^rank [0-2]: cleanup ran$' <<<"$out" || fail "dlpar module, rank 3 leaves: no finally block ran: $out"
# share_from_root from four threads of each rank at once: one at a time, in the order they came
for launcher in "srun -N2 --ntasks-per-node=2 --dl-parallel=2x2" "$B/tools/dlpar-run -n 4 --dl-parallel=2x2 --"; do
  out=$(DLPAR_TEST_THREADS=1 timeout 100 $launcher $module 2>&1)
  expect_rc "dlpar module, share_from_root from 4 threads, ${launcher%% *}" $? 0
  expect_eq "dlpar module, share_from_root from 4 threads, ${launcher%% *}: every key's own text" \
    "$(grep -c "^rank [0-3]: threads ok {0: 'value 0', 1: 'value 1', 2: 'value 2', 3: 'value 3'}" <<<"$out")" 4
done
# A loopback address for rank 0 on a job of two nodes (as a host name that /etc/hosts maps to
# 127.0.1.1 gives): refused on every rank at once, instead of the other node hanging; on one node, fine
loopback="unset DLPAR_MASTER_ADDR; MASTER_ADDR=127.0.1.1 exec $module"
out=$(timeout 100 srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 --dl-env=none bash -c "$loopback" 2>&1)
expect_rc "dlpar module, loopback rank 0 on 2 nodes" $? 1
expect_eq "dlpar module, loopback rank 0 on 2 nodes: every rank refuses" "$(grep -c "dlpar.DlparError: rank 0's address 127.0.1.1 (MASTER_ADDR) is loopback (127.0.1.1), which the job's other nodes cannot reach: ask the admin to give the nodes a NodeAddr in slurm.conf" <<<"$out")" 4
out=$(DLPAR_TEST_DUMP_AFTER=80 timeout 100 srun -N1 -n2 --dl-parallel=1x2 --dl-env=none bash -c "$loopback" 2>&1)
rc=$?
expect_rc "dlpar module, loopback rank 0 on 1 node" $rc 0
# once on the 24.11 bed the ranks printed every check and the step ran on
# to the 100-s timeout: a failure shows the step's output, with each
# rank's Python stacks at 80 s
[ $rc = 0 ] || sed 's/^/  the step: /' <<<"$out" >&2
expect_eq "dlpar module, loopback rank 0 on 1 node" "$(grep -c '^rank [01]: .* ok' <<<"$out")" $((2 * module_checks))
if /usr/bin/python3 -c 'import ipaddress, socket, sys; sys.exit(not ipaddress.ip_address(socket.gethostbyname(socket.gethostname())).is_loopback)'; then
  # this machine's name resolves to loopback (as on the bed's nodes): the module's last fallback is refused too
  out=$(timeout 100 srun -N2 --ntasks-per-node=2 --dl-parallel=2x2 --dl-env=none bash -c "unset DLPAR_MASTER_ADDR MASTER_ADDR; exec $module" 2>&1)
  expect_contains "dlpar module, rank 0's host name resolves to loopback" "$out" "(the host name $(hostname)) is loopback"
fi
# make install: the module for the system python3, pointing at the installed libdlpar
stage=$TEST_TMP/stage
make -s -C "$B" install-dlparpyDATA install-dlpar-python-library DESTDIR="$stage" >/dev/null 2>&1
expect_rc "make install of the dlpar module" $? 0
pydir=$(dirname "$(find "$stage" -name torch.py -path '*dlpar*' | head -1)")
installed=$(cd / && PYTHONPATH=$(dirname "$pydir") /usr/bin/python3 -c 'import dlpar._library as l; print(l.PATH)')
TEST_CHECKS=$((TEST_CHECKS + 1))
case $installed in /*/lib*/libdlpar.so.0) ;; *) fail "the installed module's libdlpar: '$installed', expected LIBDIR/libdlpar.so.0" ;; esac

# An arbitrary distribution may put rank 0 off the step's first node: srun refuses it before launch
# under --dl-env=torch, instead of a wrong MASTER_ADDR; under --dl-env=none rank 0's node gives the
# module its own address, so the module works with rank 0 on n2
printf 'n2\nn1\nn1\nn2\n' >"$TEST_TMP/hosts"
# no -N: Slurm 24.11 refuses --nodes with the arbitrary distribution (the host file decides)
out=$(SLURM_HOSTFILE=$TEST_TMP/hosts srun -n4 -m arbitrary --dl-parallel=1x4 bash -c 'echo started' 2>&1)
expect_rc "-m arbitrary" $? 1
expect_contains "-m arbitrary: refused by srun" "$out" "srun: error: dlpar: -m arbitrary may put rank 0 off the step's first node, whose address MASTER_ADDR is (--dl-env=torch, the default): use a block, cyclic or plane distribution, or --dl-env=none and your own MASTER_ADDR"
expect_eq "-m arbitrary: nothing launched" "$(grep -c '^started' <<<"$out")" 0
out=$(SLURM_HOSTFILE=$TEST_TMP/hosts timeout 100 srun -n4 -m arbitrary --dl-parallel=1x4 --dl-env=none $module 2>&1)
expect_rc "-m arbitrary --dl-env=none: dlpar module, rank 0 on n2" $? 0
expect_ok "-m arbitrary --dl-env=none: dlpar module, rank 0 on n2" "$out" 4 $module_checks

# dlpar-run: the same contract on one machine (127.0.0.1, a port the kernel picks, lo)
out=$("$B/tools/dlpar-run" -n 4 --dl-parallel=2x2 -- $prog tutorial 2 2>&1)
expect_rc "dlpar-run tutorial on 2x2" $? 0
expect_ok "dlpar-run tutorial on 2x2" "$out" 4 3
out=$("$B/tools/dlpar-run" -n 2 -- $prog env 2>&1)
expect_contains "dlpar-run env" "$out" "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 NODE_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT="
expect_contains "dlpar-run env" "$out" "GLOO_SOCKET_IFNAME=lo"
out=$("$B/tools/dlpar-run" -n 2 --dl-env=none -- $prog env 2>&1)
expect_eq "dlpar-run --dl-env=none" "$(grep -c "env $none" <<<"$out")" 2
finish
