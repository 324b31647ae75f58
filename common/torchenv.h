/* SPDX-License-Identifier: BSD-3-Clause */
/* common/torchenv.h: the PyTorch env:// contract of a --dl-parallel task,
 * what torchrun would have exported. RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, GROUP_RANK and NODE_RANK are there because
 * torchelastic's and Lightning's detection read them. MASTER_ADDR is world
 * rank 0's node, by address. MASTER_PORT is a port Slurm reserved for the
 * step, else one derived from job and step inside the admin's range.
 * GLOO_SOCKET_IFNAME is the interface that reaches MASTER_ADDR. The
 * launchers, spank/ and tools/run.c, fill it. A value the user exported
 * wins, because the launchers set these names without overwriting. */
#ifndef DLPAR_TORCHENV_H
#define DLPAR_TORCHENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* The admin's default range for derived ports, torch_ports in
 * plugstack.conf. It lies below torchrun's 29400 and 29500 and below
 * Linux's ephemeral ports, 32768-60999. */
#define DLPAR_TORCH_PORTS_DEFAULT "20000-29399"

/* --dl-env=torch, the default, or none, which exports no torch name, for
 * launchers that set their own, such as submitit. */
int dlpar_env_mode_parse(const char *text, bool *torch, dlpar_error *err);

/* Whether name is one of the contract's torch names, where a user's value wins. */
bool dlpar_env_is_torch_name(const char *name);

/* The names of the contract, NULL-terminated. */
extern const char *const dlpar_torch_names[];

/* The torch names set in this process's environment, as "NAME=value, ...",
 * into out, and returns its length, or 0 for none. Values are quoted for a
 * message, and the text is cut with "..." where out is full, never inside
 * a character. */
size_t dlpar_torch_names_set(char *out, size_t len);

/* "LO-HI" with 1024 <= LO <= HI <= 65535; else DLPAR_ERR_INPUT naming key. */
int dlpar_port_range_parse(const char *key, const char *text, int *lo, int *hi, dlpar_error *err);

/* This node's ephemeral ports, net.ipv4.ip_local_port_range. Returns
 * DLPAR_OK, or DLPAR_ERR_SYSTEM when they are unreadable. */
int dlpar_ephemeral_ports(int *lo, int *hi);

/* DLPAR_OK when LO-HI and the ephemeral ports do not overlap, since a port
 * in both may be taken by any outgoing connection. Otherwise
 * DLPAR_ERR_INPUT, naming key as the admin's setting when `given`, else as
 * the default. */
int dlpar_port_range_outside(const char *key, int lo, int hi, int ephemeral_lo, int ephemeral_hi, bool given,
                             dlpar_error *err);

/* The first port of SLURM_STEP_RESV_PORTS, such as "12000-12003" or
 * "12000,12005", or 0 when text is NULL, empty or not a port list. */
int dlpar_resv_ports_first(const char *text);

/* lo + (mix(job) + step) mod (hi - lo + 1), mix a 64-bit mixing function
 * of the job id: the same on every node of a step; different for up to
 * hi - lo + 1 consecutive steps of a job; two jobs' steps meet with
 * probability 1 / (hi - lo + 1), whatever their ids. */
int dlpar_torch_port_derive(uint32_t job, uint32_t step, int lo, int hi);

/* Whether a TCP listener could bind port on this node now, on every
 * address: IPv4's 0.0.0.0 and IPv6's dual-stack [::]. A listener of either
 * family on any address of the port makes it busy. */
bool dlpar_port_free(int port);

/* Who listens on port, from a table in the kernel's /proc/net/tcp or tcp6
 * format: a header line, then "sl: local_address rem_address st ... uid
 * ...". *holder is the uid of a LISTEN socket on port that is not user's
 * where there is one, else user where user holds one, else -1 when the
 * table has none. Returns DLPAR_OK, or DLPAR_ERR_INPUT for a NULL table. */
int dlpar_port_listener_parse(const char *table, int port, long user, long *holder);

/* The same over this process's network namespace, from /proc/net/tcp and
 * /proc/net/tcp6, the second one missing without IPv6. Returns DLPAR_OK,
 * or DLPAR_ERR_SYSTEM with *holder -1 when neither can be read. On the
 * node slurmstepd shares the tasks' namespace, so its answer is theirs. */
int dlpar_port_listener(int port, long user, long *holder);

/* A port the kernel picks as free now for both families by a bind to port
 * 0, or 0. dlpar-run uses it. */
int dlpar_port_pick(void);

/* Whether addr (numeric) is a loopback address: 127.0.0.0/8, ::1, or
 * ::ffff:127.x.y.z. Another node cannot reach it. */
bool dlpar_is_loopback(const char *addr);

/* The local interface whose address the kernel would send from to reach
 * addr, a numeric IPv4 or IPv6 address. Returns DLPAR_OK and its name, or
 * DLPAR_ERR_SYSTEM, or DLPAR_ERR_INPUT for a NULL or empty argument. A
 * loopback interface, with IFF_LOOPBACK, is the answer only for a loopback
 * addr, because a node's own address held on lo is no interface towards it
 * for the other nodes. libdlpar exports it in dlpar.h, and the plugin and
 * dlpar-run call it here. */
int dlpar_route_interface(const char *addr, char *ifname, size_t len);

/* host's address as text: host itself when it is numeric already, else the
 * first IPv4, then IPv6, address it resolves to. Returns DLPAR_OK, or
 * DLPAR_ERR_SYSTEM. */
int dlpar_numeric_address(const char *host, char *out, size_t len);

#endif
