/*
 * Peer processes for cross-process tests: a helper program, or a function in
 * a forked child (optionally inside an emulated node), joined to this process
 * by a control socketpair; small framed messages over it (connection handles,
 * "ready", results); a bounded reap. Processes are started by the one spawner
 * (tools/lib/tool_proc.h): a peer dies with its parent, so a test binary
 * killed by the runner's timeout leaves nothing, and a crashing child does not
 * fall into cmocka's handlers.
 *
 * Every spawned peer is tracked until reaped; sts_peer_kill_all() (call it
 * from every teardown) kills and reaps whatever is left, so a failed
 * assertion never leaves a process behind.
 *
 * Thread safety: none; one test thread owns its peers.
 */
#ifndef STS_PROC_H
#define STS_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "tools/lib/tool_netns.h"

#define STS_PEER_MAX 16

typedef struct sts_peer {
    pid_t pid;       /* 0 once reaped */
    int fd;          /* this end of the control socket; -1 once closed */
    int status;      /* after reaping: exit code, or 128 + signal number */
} sts_peer_t;

/*
 * In a forked child (which cannot use cmocka's asserts): when cond is false, reports the
 * pid, file, line and the message on stderr and returns 1 from the calling function.
 */
#define STS_CHILD_CHECK(cond, ...)                                                      \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "child %d, %s:%d: ", (int)getpid(), __FILE__, __LINE__);    \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/*
 * Starts `prog` with argv: prog, <control fd>, args... (args NULL-terminated).
 * Returns 0, or -1 with errno set (nothing left running).
 */
int sts_peer_spawn(sts_peer_t *peer, const char *prog, const char *const *args);

/*
 * Forks a child that runs fn(arg, ctl) and exits with its return value; with
 * ns, inside node's namespaces (tools/lib/tool_netns.h). ctl is the child's
 * end of the control socketpair (peer->fd the parent's). The child does not
 * hold the control sockets of the other tracked peers (their EOFs stay
 * visible). A child must not use cmocka's asserts: it reports through its
 * exit status, ctl and stderr. Returns 0, or -1 (nothing left running).
 */
int sts_peer_fork(sts_peer_t *peer, const stb_netns_t *ns, int node,
                  int (*fn)(void *arg, int ctl), void *arg);

/*
 * Waits for the peer to exit until the deadline (sts_deadline). Returns its
 * exit code (128 + signal if it was killed), or -1 if the deadline passed, in
 * which case it has been killed and reaped. Closes the control socket.
 */
int sts_peer_wait(sts_peer_t *peer, uint64_t deadline);

/* SIGKILL and reap now; closes the control socket. Harmless on a reaped peer. */
void sts_peer_kill(sts_peer_t *peer);

/* Kills and reaps every peer still tracked. Returns how many there were. */
int sts_peer_kill_all(void);

/* Has the peer exited (reaps it if so, without waiting)? */
int sts_peer_exited(sts_peer_t *peer);

/* Control messages: a kind, a length, up to STS_CTL_MAX bytes. */
#define STS_CTL_MAX 512

enum {
    STS_CTL_HANDLE = 1,   /* a 128-byte connection handle */
    STS_CTL_READY,        /* "I reached the agreed point" */
    STS_CTL_GO,           /* "carry on" */
    STS_CTL_RESULT,       /* int32 status (0 = success) then a NUL-terminated message */
    STS_CTL_INFO,         /* free-form values a scenario reports */
};

/* Sends one message (blocking; the socket buffer holds many). 0 or -1. */
int sts_ctl_send(int fd, uint32_t kind, const void *data, uint32_t len);

/*
 * Receives one message until the deadline. Returns 0 (*kind_p, *len_p set,
 * data up to cap bytes), -1 on EOF or error, -2 when the deadline passed.
 */
int sts_ctl_recv(int fd, uint32_t *kind_p, void *data, uint32_t cap, uint32_t *len_p,
                 uint64_t deadline);

/* Receives one message that must be of `kind` and exactly len bytes. 0, or -1 otherwise. */
int sts_ctl_expect(int fd, uint32_t kind, void *data, uint32_t len, uint64_t deadline);

/* Is a message (or EOF) waiting? Does not block. */
int sts_ctl_pending(int fd);

/* Sends a RESULT: status and a printf-style message. */
int sts_ctl_result(int fd, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Waits for a RESULT until the deadline, skipping other kinds. Returns its
 * status, with the message copied into msg (cap bytes); -1000 on EOF or
 * timeout (msg says which).
 */
int32_t sts_ctl_wait_result(int fd, char *msg, size_t cap, uint64_t deadline);

/*
 * The collective library's rendezvous across emulated nodes, as a launcher hands it out.
 * In a rank forked into `node` (sts_peer_fork): rank 0 listens (backlog) on its node's
 * address, port 0, and sends the address to the parent over ctl; the others receive it.
 * Writes the address into root (STU_ADDR_TEXT_LEN) and, for rank 0, the listening socket
 * into *lfd_p (else -1). 0, or a nonzero exit code for the child (10..12).
 */
int sts_root_child(int ctl, int node, int rank, int backlog, uint64_t deadline, char *root,
                   size_t len, int *lfd_p);
/* In the parent: relays rank 0's address (peers[0]) to peers[1..n). 0, or -1. */
int sts_root_relay(const sts_peer_t *peers, int n, uint64_t deadline);

/* Waits for peers[0..n) (ranks), printing each nonzero exit status; how many failed. */
int sts_root_wait_all(sts_peer_t *peers, int n, uint64_t deadline);

#endif /* STS_PROC_H */
