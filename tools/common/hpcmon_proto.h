/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wire format between the MPI monitor (libhpcmon, in each rank) and hpcd.
 *
 * Each rank connects to hpcd's Unix SOCK_SEQPACKET socket (the path is
 * $HPCD_SOCKET, default HPCMON_DEFAULT_SOCKET) and sends its hello, then one
 * record per closed iteration, then its bye. One connection per rank: each
 * has its own queue, so that a barrier's records of every rank of a node all
 * arrive. Sends are non-blocking (MSG_DONTWAIT) and dropped when hpcd is not
 * there or is behind: the monitor must never slow the application down.
 * Without a connection the monitor tries again at most once a second, and a
 * new connection starts with a hello. hpcd takes a connection that hangs up
 * without a bye for the rank's end.
 *
 * hpcd turns a record into the policy core's events: sleep at
 * end_ns - wait_ns, wake-up at end_ns (CLOCK_MONOTONIC).
 */
#ifndef HPCMON_PROTO_H
#define HPCMON_PROTO_H

#include <stdint.h>

#define HPCMON_MAGIC		0x48504331u	/* "HPC1" */
#define HPCMON_VERSION		3
#define HPCMON_DEFAULT_SOCKET	"/run/hpcd.sock"

enum hpcmon_kind {
	HPCMON_ITERATION = 1,	/* an iteration closed */
	HPCMON_HELLO = 2,	/* rank started: pid, rank, size, job */
	HPCMON_BYE = 3,		/* rank finalised */
};

struct hpcmon_record {
	uint32_t magic;		/* HPCMON_MAGIC */
	uint16_t version;	/* HPCMON_VERSION */
	uint16_t kind;		/* enum hpcmon_kind */
	int32_t pid;		/* the rank's process */
	int32_t rank;		/* MPI_COMM_WORLD rank */
	int32_t size;		/* MPI_COMM_WORLD size */
	uint32_t job;		/* job id: hash of the launcher's job identity */
	uint64_t iteration;	/* 0-based index of the closed iteration */
	uint64_t run_ns;	/* t_R: compute time of the iteration */
	uint64_t wait_ns;	/* t_W: time in blocking MPI calls */
	uint64_t end_ns;	/* CLOCK_MONOTONIC when the iteration closed */
	uint64_t cpu_ns;	/* CPU time of the compute phase (the main
				 * thread's CLOCK_THREAD_CPUTIME_ID), 0: not
				 * measured; unlike run_ns it does not grow
				 * when the rank shares its CPU */
	uint32_t phases;	/* compute phases the iteration holds: a wait
				 * shorter than the monitor's min wait joins
				 * the next one (0 is read as 1); cpu_ns / phases
				 * is the work of one phase */
	uint32_t reserved;	/* 0 */
};

#endif /* HPCMON_PROTO_H */
