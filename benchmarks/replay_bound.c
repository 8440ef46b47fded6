/* The least a program can do to make a capture's calls as recorded: each connection's
 * requests (read from a file replay_bound.py writes) sent one at a time to a target,
 * each waiting for its reply (framed by its GIOP length, not compared), the
 * connections side by side.  Three ways of waiting:
 *   sleep    one thread, epoll_wait() sleeping until a reply comes;
 *   threads  a thread per connection, blocking in recv();
 *   poll     one thread, epoll_wait() polled without sleeping.
 * It prints calls/s and the process's CPU a call.  benchmarks/replay_bound.py builds
 * and runs it beside omniORBpy's own clients; see benchmarks/README.md (issue 28).
 *
 *   replay_bound REQUESTS PORT sleep|threads|poll
 * REQUESTS: records of (uint32 connection, uint32 length, uint32 twoway), little-endian,
 * each followed by the request's bytes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 64
#define BUFFER 65536

typedef struct { unsigned char *data; uint32_t len; int twoway; } Request;
typedef struct {
    Request *requests;
    int count, next, fd, have;
    long done;
    unsigned char buf[BUFFER];
} Connection;

static Connection conns[MAX_CONNECTIONS];
static int nconns;

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fail(const char *what) { perror(what); exit(1); }

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        fail("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Send requests until a two-way one is out: 1, a reply is awaited; 0, none left. */
static int send_next(Connection *c) {
    while (c->next < c->count) {
        Request *r = &c->requests[c->next++];
        if (send(c->fd, r->data, r->len, 0) != (ssize_t)r->len)
            fail("send");
        if (r->twoway)
            return 1;
        c->done++;
    }
    return 0;
}

/* Whether a whole message is buffered (then dropped from the buffer). */
static int take_reply(Connection *c) {
    if (c->have < 12)
        return 0;
    uint32_t size;
    memcpy(&size, c->buf + 8, 4);
    if (!(c->buf[6] & 1))
        size = ntohl(size);
    if (size > BUFFER - 12) {
        fprintf(stderr, "a reply of %u bytes: more than this program buffers\n", size);
        exit(1);
    }
    if ((uint32_t)c->have < 12 + size)
        return 0;
    c->have -= (int)(12 + size);
    memmove(c->buf, c->buf + 12 + size, (size_t)c->have);
    c->done++;
    return 1;
}

static void receive(Connection *c) {
    ssize_t got = recv(c->fd, c->buf + c->have, (size_t)(BUFFER - c->have), 0);
    if (got <= 0)
        fail("recv");
    c->have += (int)got;
}

static void *one_connection(void *arg) {
    Connection *c = arg;
    while (send_next(c))
        while (!take_reply(c))
            receive(c);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s REQUESTS PORT sleep|threads|poll\n", argv[0]);
        return 2;
    }
    int threads = strcmp(argv[3], "threads") == 0, polled = strcmp(argv[3], "poll") == 0;
    if (!threads && !polled && strcmp(argv[3], "sleep") != 0)
        return 2;
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL)
        fail("open");
    uint32_t head[3];
    while (fread(head, 4, 3, f) == 3) {
        if (head[0] >= MAX_CONNECTIONS) {
            fprintf(stderr, "more than %d connections\n", MAX_CONNECTIONS);
            return 1;
        }
        Connection *c = &conns[head[0]];
        if ((int)head[0] >= nconns)
            nconns = (int)head[0] + 1;
        c->requests = realloc(c->requests, (size_t)(c->count + 1) * sizeof(Request));
        Request *r = &c->requests[c->count++];
        r->len = head[1];
        r->twoway = (int)head[2];
        r->data = malloc(r->len);
        if (c->requests == NULL || r->data == NULL || fread(r->data, 1, r->len, f) != r->len)
            fail("read");
    }
    fclose(f);
    for (int i = 0; i < nconns; i++)
        conns[i].fd = dial(atoi(argv[2]));
    double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID), start = seconds(CLOCK_MONOTONIC);
    if (threads) {
        pthread_t t[MAX_CONNECTIONS];
        for (int i = 0; i < nconns; i++)
            pthread_create(&t[i], NULL, one_connection, &conns[i]);
        for (int i = 0; i < nconns; i++)
            pthread_join(t[i], NULL);
    } else {
        int ep = epoll_create1(0), live = 0;
        for (int i = 0; i < nconns; i++) {
            struct epoll_event e = {.events = EPOLLIN, .data.ptr = &conns[i]};
            epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e);
            live += send_next(&conns[i]);
        }
        struct epoll_event ready[MAX_CONNECTIONS];
        while (live) {
            int n = epoll_wait(ep, ready, MAX_CONNECTIONS, polled ? 0 : -1);
            for (int j = 0; j < n; j++) {
                Connection *c = ready[j].data.ptr;
                receive(c);
                while (take_reply(c))
                    if (!send_next(c)) {
                        live--;
                        break;
                    }
            }
        }
    }
    double elapsed = seconds(CLOCK_MONOTONIC) - start;
    cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    long calls = 0;
    for (int i = 0; i < nconns; i++)
        calls += conns[i].done;
    printf("{\"calls\": %ld, \"seconds\": %.6f, \"cpu\": %.6f}\n", calls, elapsed, cpu);
    return 0;
}
