/*
 * fake_zygote.c — a stand-in for sandboxd-zygote in test_zygote_client: it speaks the
 * zygote protocol (zygote_proto.h) on fd 3 but forks nothing. It reports ready, then
 * answers each ZYG_FORK according to the request's cwd, so a test scripts the outcomes:
 *   /ok      answered at once: a = FAKE_PID (a pid that is never ours), b = 2
 *   /hold    answered (like /ok, b = 3) only after the next request's answer: out of order
 *   /fail    answered with a = -ENOSPC and a sentence
 *   /die     not answered: the zygote exits 0 (the daemon's side sees it die)
 * The request's fds are closed at once. It exits at EOF on fd 3 (the daemon stopped it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jail_enter.h"
#include "zygote/zygote_proto.h"

#define FAKE_PID 999999

static void reply(uint32_t id, int32_t a, int32_t b, const char *msg)
{
    struct zyg_hdr h = { .magic = ZYG_MAGIC,
                         .type = ZYG_FORKED,
                         .id = id,
                         .a = a,
                         .b = b,
                         .len = msg ? (uint32_t)strlen(msg) + 1 : 0 };
    if (zyg_send(ZYG_CTL_FD, &h, msg, NULL, 0))
        exit(2);
}

int main(void)
{
    const char version[] = "0.0-fake";
    struct zyg_hdr r = { .magic = ZYG_MAGIC, .type = ZYG_READY, .len = sizeof version };
    if (zyg_send(ZYG_CTL_FD, &r, version, NULL, 0))
        return 2;
    static char buf[ZYG_MSG_MAX];
    uint32_t held = 0;
    bool holding = false;
    for (;;) {
        struct zyg_hdr h;
        int fds[ZYG_MAX_FDS], nfds = 0;
        int rc = zyg_recv(ZYG_CTL_FD, &h, buf, sizeof buf, fds, &nfds, 0);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (rc == 0)
            return 0;
        if (rc < 0 || h.type != ZYG_FORK || h.len < sizeof(struct jail_entry) + 2)
            return 3;
        const char *cwd = buf + sizeof(struct jail_entry);
        if (strcmp(cwd, "/die") == 0)
            return 0;
        if (strcmp(cwd, "/hold") == 0) {
            held = h.id;
            holding = true;
            continue;
        }
        if (strcmp(cwd, "/fail") == 0)
            reply(h.id, -ENOSPC, 0, "no room for a context");
        else
            reply(h.id, FAKE_PID, 2, NULL);
        if (holding) {
            reply(held, FAKE_PID, 3, NULL);
            holding = false;
        }
    }
}
