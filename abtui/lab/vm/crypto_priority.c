/* abtui-crypto-priority DRIVER PRIORITY: set a registered crypto algorithm's priority through
 * the kernel's crypto_user netlink interface (CRYPTO_MSG_UPDATEALG, CONFIG_CRYPTO_USER), as
 * crconf does. The kernel tears down the instances built on it, so the next user of its name
 * is built on whatever now ranks first. Freestanding (raw EABI system calls, no libc): the
 * lab's cross compiler has no armhf libc to link against. Exit 0 when the kernel acked. */

#define NETLINK_CRYPTO 21
#define CRYPTO_MSG_UPDATEALG 0x12
#define CRYPTOCFGA_PRIORITY_VAL 1
#define NLM_F_REQUEST 1
#define NLM_F_ACK 4
#define NLMSG_ERROR 2

typedef unsigned int u32;
typedef unsigned short u16;

struct nlmsghdr { u32 len; u16 type; u16 flags; u32 seq; u32 pid; };
struct crypto_user_alg { char name[64]; char driver[64]; char module[64];
                         u32 type, mask, refcnt, flags; };
struct nlattr { u16 len; u16 type; };
struct request { struct nlmsghdr h; struct crypto_user_alg alg; struct nlattr a; u32 prio; };
struct sockaddr_nl { u16 family; u16 pad; u32 pid; u32 groups; };

static long sys(long nr, long a, long b, long c, long d, long e, long f)
{
    register long r0 __asm__("r0") = a, r1 __asm__("r1") = b, r2 __asm__("r2") = c,
        r3 __asm__("r3") = d, r4 __asm__("r4") = e, r5 __asm__("r5") = f,
        r7 __asm__("r7") = nr;
    __asm__ volatile("svc 0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5),
                     "r"(r7) : "memory");
    return r0;
}

static unsigned len(const char *s) { unsigned n = 0; while (s[n]) n++; return n; }
static void say(const char *s) { sys(4, 2, (long)s, len(s), 0, 0, 0); }

static int run(int argc, char **argv)
{
    static struct request req;
    static char reply[1024];
    struct sockaddr_nl kernel = { 16, 0, 0, 0 };
    u32 prio = 0;
    const char *p;
    unsigned i;
    long fd, n;

    if (argc != 3 || len(argv[1]) >= 64 || !*argv[2]) {
        say("usage: abtui-crypto-priority DRIVER PRIORITY\n");
        return 2;
    }
    for (p = argv[2]; *p; p++) {
        if (*p < '0' || *p > '9') { say("abtui-crypto-priority: PRIORITY is a number\n"); return 2; }
        prio = prio * 10 + (u32)(*p - '0');
    }
    req.h.len = sizeof req;
    req.h.type = CRYPTO_MSG_UPDATEALG;
    req.h.flags = NLM_F_REQUEST | NLM_F_ACK;
    req.h.seq = 1;
    for (i = 0; argv[1][i]; i++) req.alg.driver[i] = argv[1][i];
    req.a.len = sizeof req.a + sizeof req.prio;
    req.a.type = CRYPTOCFGA_PRIORITY_VAL;
    req.prio = prio;
    fd = sys(281, 16 /* AF_NETLINK */, 3 /* SOCK_RAW */, NETLINK_CRYPTO, 0, 0, 0);
    if (fd < 0) { say("abtui-crypto-priority: no crypto_user netlink (CONFIG_CRYPTO_USER)\n"); return 1; }
    if (sys(290, fd, (long)&req, sizeof req, 0, (long)&kernel, sizeof kernel) < 0) {
        say("abtui-crypto-priority: send failed\n");
        return 1;
    }
    n = sys(292, fd, (long)reply, sizeof reply, 0, 0, 0);
    if (n < (long)(sizeof(struct nlmsghdr) + 4) || ((struct nlmsghdr *)reply)->type != NLMSG_ERROR) {
        say("abtui-crypto-priority: no answer from the kernel\n");
        return 1;
    }
    if (*(int *)(reply + sizeof(struct nlmsghdr)) != 0) {
        say("abtui-crypto-priority: the kernel refused (no such driver, or not root)\n");
        return 1;
    }
    return 0;
}

__attribute__((used)) static void start_c(long *sp)
{
    sys(1, run((int)sp[0], (char **)(sp + 1)), 0, 0, 0, 0, 0);
}

__asm__(".global _start\n_start:\n mov r0, sp\n bl start_c\n");
