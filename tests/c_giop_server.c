/* A small GIOP server in C, written without pycdr, for testing the fuzzer
 * against a target it did not write (tests/test_fuzz_independent.py builds
 * it with gcc).
 *
 * It serves one object (key "CEcho"): Requests of GIOP 1.0-1.2 get a
 * NO_EXCEPTION Reply (_non_existent a boolean false, other operations an
 * empty body), a wrong key an OBJECT_NOT_EXIST system exception;
 * LocateRequests get a LocateReply; 1.1 and 1.2 fragments are reassembled;
 * what it cannot parse gets a MessageError and a close.  One thread per
 * connection.
 *
 * Planted faults (none where tests/fragile_server.py or
 * tests/raw_giop_server.py have theirs):
 *   crash: a GIOP 1.1 Fragment while no fragmented message is pending on the
 *          connection (a stray or reordered fragment) is appended to a
 *          pending buffer that is not there: SIGSEGV;
 *   flood: the response_expected octet of a GIOP 1.0/1.1 Request is taken
 *          as a count of replies to send (1 for TRUE; 0x80 makes 128).
 *
 * Prints a corbaloc URL, serves on 127.0.0.1 (a free port, or the port given
 * as its argument) until its standard input closes or it is killed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY "CEcho"
#define MAX_MESSAGE (1u << 20)
enum { REQUEST, REPLY, CANCEL, LOCATE_REQUEST, LOCATE_REPLY, CLOSE, MESSAGE_ERROR, FRAGMENT };

struct reader { const uint8_t *d; size_t n, pos; int le, bad; };
struct buf { uint8_t *d; size_t len, cap; };
struct pending { struct buf msg; uint32_t request_id; };
struct conn { int fd; struct pending *p11; struct pending *p12; };

static void rd_align(struct reader *r, size_t a) { r->pos += (a - r->pos % a) % a; }

static uint32_t rd_uint(struct reader *r, size_t size) {
    rd_align(r, size);
    if (r->bad || r->pos + size > r->n) { r->bad = 1; return 0; }
    uint32_t v = 0;
    for (size_t i = 0; i < size; i++) {
        uint32_t b = r->d[r->pos + i];
        v |= r->le ? b << (8 * i) : b << (8 * (size - 1 - i));
    }
    r->pos += size;
    return v;
}

static const uint8_t *rd_seq(struct reader *r, uint32_t *len) {
    *len = rd_uint(r, 4);
    if (r->bad || *len > r->n - r->pos) { r->bad = 1; return NULL; }
    const uint8_t *p = r->d + r->pos;
    r->pos += *len;
    return p;
}

static void buf_put(struct buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->d = realloc(b->d, b->cap);
        if (!b->d) abort();
    }
    memcpy(b->d + b->len, data, n);
    b->len += n;
}

static void wr_align(struct buf *b, size_t a) {
    static const uint8_t zeros[8];
    buf_put(b, zeros, (a - b->len % a) % a);
}

static void wr_ulong(struct buf *b, uint32_t v, int le) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++) x[i] = le ? v >> (8 * i) : v >> (8 * (3 - i));
    wr_align(b, 4);
    buf_put(b, x, 4);
}

static void wr_header(struct buf *b, int minor, int le, int type) {
    uint8_t h[12] = {'G', 'I', 'O', 'P', 1, (uint8_t)minor, (uint8_t)(le ? 1 : 0), (uint8_t)type};
    b->len = 0;
    buf_put(b, h, 12);
}

static int send_all(int fd, const uint8_t *d, size_t n) {
    while (n) {
        ssize_t k = send(fd, d, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        d += k;
        n -= (size_t)k;
    }
    return 0;
}

static int send_message(int fd, struct buf *b, int le) {
    uint32_t size = (uint32_t)(b->len - 12);
    for (int i = 0; i < 4; i++) b->d[8 + i] = le ? size >> (8 * i) : size >> (8 * (3 - i));
    return send_all(fd, b->d, b->len);
}

static void message_error(int fd, int minor) {
    uint8_t m[12] = {'G', 'I', 'O', 'P', 1, (uint8_t)(minor > 2 ? 2 : minor), 0, MESSAGE_ERROR};
    send_all(fd, m, 12);
}

/* The object key of a TargetAddress (1.2) or object_key (1.0/1.1); *key_len
 * is set to UINT32_MAX for addressing by profile or reference. */
static const uint8_t *read_target(struct reader *r, int minor, uint32_t *key_len) {
    if (minor < 2) return rd_seq(r, key_len);
    uint32_t disc = rd_uint(r, 2), n;
    if (disc == 0) return rd_seq(r, key_len);
    *key_len = UINT32_MAX;
    if (disc == 1) { rd_uint(r, 4); rd_seq(r, &n); return NULL; }
    if (disc == 2) {
        rd_uint(r, 4);
        rd_seq(r, &n);                         /* type id */
        uint32_t count = rd_uint(r, 4);
        for (uint32_t i = 0; i < count && !r->bad; i++) { rd_uint(r, 4); rd_seq(r, &n); }
        return NULL;
    }
    r->bad = 1;
    return NULL;
}

static void skip_contexts(struct reader *r) {
    uint32_t count = rd_uint(r, 4), n;
    for (uint32_t i = 0; i < count && !r->bad; i++) { rd_uint(r, 4); rd_seq(r, &n); }
}

/* 0: carry on, -1: close. */
static int handle_request(struct conn *c, const uint8_t *d, size_t n, int minor, int le) {
    struct reader r = {d, n, 12, le, 0};
    uint32_t request_id, replies, key_len, op_len, n2;
    if (minor < 2) {
        skip_contexts(&r);
        request_id = rd_uint(&r, 4);
        replies = rd_uint(&r, 1);   /* the planted flood: an octet used as a count */
        if (minor == 1) r.pos += 3;
    } else {
        request_id = rd_uint(&r, 4);
        replies = rd_uint(&r, 1) & 1;
        r.pos += 3;
    }
    const uint8_t *key = read_target(&r, minor, &key_len);
    const uint8_t *op = rd_seq(&r, &op_len);
    if (minor < 2) rd_seq(&r, &n2); else skip_contexts(&r);
    if (r.bad || op_len == 0 || op[op_len - 1] != 0) return -1;
    int non_existent = op_len == 14 && memcmp(op, "_non_existent", 14) == 0;
    int known = key_len == UINT32_MAX || (key_len == strlen(KEY) && memcmp(key, KEY, key_len) == 0);
    struct buf b = {0};
    wr_header(&b, minor, le, REPLY);
    if (minor < 2) { wr_ulong(&b, 0, le); wr_ulong(&b, request_id, le); }
    else wr_ulong(&b, request_id, le);
    if (!known) {
        static const char id[] = "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0";
        wr_ulong(&b, 2, le);
        if (minor >= 2) { wr_ulong(&b, 0, le); wr_align(&b, 8); }
        wr_ulong(&b, sizeof id, le);
        buf_put(&b, id, sizeof id);
        wr_ulong(&b, 0, le);
        wr_ulong(&b, 1, le);
    } else {
        wr_ulong(&b, 0, le);
        if (minor >= 2) { wr_ulong(&b, 0, le); if (non_existent) wr_align(&b, 8); }
        if (non_existent) { uint8_t f = 0; buf_put(&b, &f, 1); }
    }
    int rc = 0;
    for (uint32_t i = 0; i < replies && rc == 0; i++) rc = send_message(c->fd, &b, le);
    free(b.d);
    return rc;
}

static int handle_locate(struct conn *c, const uint8_t *d, size_t n, int minor, int le) {
    struct reader r = {d, n, 12, le, 0};
    uint32_t request_id = rd_uint(&r, 4), key_len;
    const uint8_t *key = read_target(&r, minor, &key_len);
    if (r.bad) return -1;
    int here = key_len == UINT32_MAX || (key_len == strlen(KEY) && memcmp(key, KEY, key_len) == 0);
    struct buf b = {0};
    wr_header(&b, minor, le, LOCATE_REPLY);
    wr_ulong(&b, request_id, le);
    wr_ulong(&b, here ? 1 : 0, le);
    int rc = send_message(c->fd, &b, le);
    free(b.d);
    return rc;
}

static int dispatch(struct conn *c, const uint8_t *d, size_t n) {
    int minor = d[5], le = d[6] & 1;
    switch (d[7]) {
    case REQUEST: return handle_request(c, d, n, minor, le);
    case LOCATE_REQUEST: return handle_locate(c, d, n, minor, le);
    case CANCEL: return 0;
    default: return -1;
    }
}

static int recv_all(int fd, uint8_t *d, size_t n) {
    while (n) {
        ssize_t k = recv(fd, d, n, 0);
        if (k <= 0) return -1;
        d += k;
        n -= (size_t)k;
    }
    return 0;
}

/* A fragmented message is complete: its size fixed, the flag cleared, handled. */
static int finish(struct conn *c, struct pending *p) {
    struct buf *m = &p->msg;
    int le = m->d[6] & 1;
    uint32_t size = (uint32_t)(m->len - 12);
    for (int i = 0; i < 4; i++) m->d[8 + i] = le ? size >> (8 * i) : size >> (8 * (3 - i));
    m->d[6] &= ~2;
    int rc = dispatch(c, m->d, m->len);
    free(m->d);
    free(p);
    return rc;
}

static int handle(struct conn *c, uint8_t *d, size_t n) {
    int minor = d[5], le = d[6] & 1, more = minor >= 1 && (d[6] & 2), type = d[7];
    if (type == CLOSE || type == MESSAGE_ERROR) return -1;
    if (type == FRAGMENT && minor == 1) {
        struct pending *p = c->p11;   /* the planted crash: NULL when nothing is pending */
        buf_put(&p->msg, d + 12, n - 12);
        if (more) return 0;
        c->p11 = NULL;
        return finish(c, p);
    }
    if (type == FRAGMENT && minor == 2) {
        struct reader r = {d, n, 12, le, 0};
        uint32_t id = rd_uint(&r, 4);
        struct pending *p = c->p12;
        if (r.bad || !p || p->request_id != id) return -1;
        buf_put(&p->msg, d + 16, n - 16);
        if (more) return 0;
        c->p12 = NULL;
        return finish(c, p);
    }
    if (more && (type == REQUEST || type == LOCATE_REQUEST) && (minor == 2 || type == REQUEST)) {
        struct pending **slot = minor == 1 ? &c->p11 : &c->p12;
        if (*slot) return -1;
        struct pending *p = calloc(1, sizeof *p);
        struct reader r = {d, n, 12, le, 0};
        p->request_id = rd_uint(&r, 4);
        buf_put(&p->msg, d, n);
        *slot = p;
        return 0;
    }
    return dispatch(c, d, n);
}

static void *serve(void *arg) {
    struct conn *c = arg;
    uint8_t header[12];
    while (recv_all(c->fd, header, 12) == 0) {
        int le = header[6] & 1, minor = header[5];
        if (memcmp(header, "GIOP", 4) != 0 || header[4] != 1 || minor > 2) {
            message_error(c->fd, 0);
            break;
        }
        uint32_t size = 0;
        for (int i = 0; i < 4; i++)
            size |= (uint32_t)header[8 + i] << (le ? 8 * i : 8 * (3 - i));
        if (size > MAX_MESSAGE) { message_error(c->fd, minor); break; }
        uint8_t *d = malloc(12 + (size_t)size);
        if (!d) abort();
        memcpy(d, header, 12);
        if (recv_all(c->fd, d + 12, size) != 0) { free(d); break; }
        int rc = handle(c, d, 12 + (size_t)size);
        free(d);
        if (rc != 0) { message_error(c->fd, minor); break; }
    }
    close(c->fd);
    for (struct pending **p = &c->p11; p <= &c->p12; p++)
        if (*p) { free((*p)->msg.d); free(*p); }
    free(c);
    return NULL;
}

static void *watch_stdin(void *arg) {
    char b[256];
    (void)arg;
    while (read(0, b, sizeof b) > 0) {}
    _exit(0);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 0, one = 1;
    /* The planted crash is judged by the exit: no core file in the tests' folder. */
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listener, (struct sockaddr *)&a, sizeof a) != 0 || listen(listener, 128) != 0) {
        perror("bind");
        return 1;
    }
    socklen_t len = sizeof a;
    getsockname(listener, (struct sockaddr *)&a, &len);
    printf("corbaloc:iiop:1.2@127.0.0.1:%d/%s\n", ntohs(a.sin_port), KEY);
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, watch_stdin, NULL);
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        c->fd = fd;
        if (pthread_create(&t, NULL, serve, c) != 0) { close(fd); free(c); continue; }
        pthread_detach(t);
    }
}
