/* A small GIOP server in C, written without pycdr, for testing the fuzzer's
 * coverage feedback (tests/test_fuzz_coverage.py builds it with clang,
 * -fsanitize-coverage=trace-pc-guard and AddressSanitizer, linked with
 * pycdr/fuzz/coverage_shim.c).
 *
 * It serves one object (key "Echo") over GIOP 1.0-1.2 in either byte order:
 * LocateRequests get a LocateReply; Requests for _non_existent get FALSE,
 * _is_a a boolean, echo(string) and echo_deep(string) (tests/targets/
 * giop_echo.idl) their string back, other operations a BAD_OPERATION system
 * exception, a wrong key OBJECT_NOT_EXIST, a string
 * argument longer than the body MARSHAL; each service context id it knows
 * takes a path of its own; what it cannot parse gets a MessageError and a
 * close (fragments are not reassembled).  One thread per connection.
 *
 * The planted fault: echo_deep folds a string whose first two octets both
 * have their high bit set (an 8-bit encoding, not ASCII) through a 16-octet
 * buffer, with no length check: a stack-buffer overflow for any such string
 * longer than 16 octets (AddressSanitizer aborts the process).  Random
 * mutation hardly sets two given bits at once; feedback that keeps the input
 * passing the first check, then mutates it further, does.
 *
 * --tick MS: a thread that runs a function every MS milliseconds, whatever
 * the connections do (coverage that flickers without input).
 *
 * Prints a corbaloc URL, serves on 127.0.0.1 (a free port) until its
 * standard input closes or it is killed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY "Echo"
#define MAX_BODY (1u << 20)
enum { REQUEST, REPLY, CANCEL, LOCATE_REQUEST, LOCATE_REPLY, CLOSE, MESSAGE_ERROR, FRAGMENT };
enum { NO_EXCEPTION = 0, SYSTEM_EXCEPTION = 2 };

struct reader { uint8_t *d; size_t n, pos; int le, bad; };
struct writer { uint8_t d[4096]; size_t n; };

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

/* An octet sequence or string: its length checked against what is left. */
static uint8_t *rd_seq(struct reader *r, uint32_t *len) {
    *len = rd_uint(r, 4);
    if (r->bad || *len > r->n - r->pos) { r->bad = 1; return NULL; }
    uint8_t *p = r->d + r->pos;
    r->pos += *len;
    return p;
}

/* Replies are written big-endian; the body starts at offset 12. */
static void wr_align(struct writer *w, size_t a) {
    while ((w->n - 12) % a) w->d[w->n++] = 0;
}

static void wr_ulong(struct writer *w, uint32_t v) {
    wr_align(w, 4);
    w->d[w->n++] = v >> 24; w->d[w->n++] = v >> 16; w->d[w->n++] = v >> 8; w->d[w->n++] = v;
}

static void wr_string(struct writer *w, const char *s, size_t len) {
    if (len > sizeof w->d - w->n - 8) len = sizeof w->d - w->n - 8;
    wr_ulong(w, (uint32_t)len + 1);
    memcpy(w->d + w->n, s, len);
    w->n += len;
    w->d[w->n++] = 0;
}

static void start(struct writer *w, int minor, int type) {
    memcpy(w->d, "GIOP", 4);
    w->d[4] = 1; w->d[5] = (uint8_t)minor; w->d[6] = 0; w->d[7] = (uint8_t)type;
    w->n = 12;
}

static int finish(int fd, struct writer *w) {
    uint32_t size = (uint32_t)w->n - 12;
    w->d[8] = size >> 24; w->d[9] = size >> 16; w->d[10] = size >> 8; w->d[11] = size;
    return send(fd, w->d, w->n, MSG_NOSIGNAL) == (ssize_t)w->n ? 0 : -1;
}

static int message_error(int fd, int minor) {
    struct writer w;
    start(&w, minor, MESSAGE_ERROR);
    finish(fd, &w);
    return -1;
}

static void reply_head(struct writer *w, int minor, uint32_t id, uint32_t status) {
    start(w, minor, REPLY);
    if (minor < 2) {
        wr_ulong(w, 0);                   /* no service contexts */
        wr_ulong(w, id);
        wr_ulong(w, status);
    } else {
        wr_ulong(w, id);
        wr_ulong(w, status);
        wr_ulong(w, 0);
    }
}

static int system_exception(int fd, int minor, uint32_t id, const char *repo, uint32_t code) {
    struct writer w;
    reply_head(&w, minor, id, SYSTEM_EXCEPTION);
    if (minor >= 2) wr_align(&w, 8);
    wr_string(&w, repo, strlen(repo));
    wr_ulong(&w, code);
    wr_ulong(&w, 1);                      /* COMPLETED_NO */
    return finish(fd, &w);
}

/* Service contexts: a count, then (id, encapsulation) pairs. */
static int service_contexts(struct reader *r, int *codesets) {
    uint32_t count = rd_uint(r, 4);
    if (r->bad || count > (r->n - r->pos) / 8) { r->bad = 1; return -1; }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t id = rd_uint(r, 4), len;
        const uint8_t *data = rd_seq(r, &len);
        if (r->bad) return -1;
        switch (id) {
        case 1:                           /* CodeSets: an encapsulation of two ulongs */
            if (len < 12) return -1;
            *codesets = 1;
            break;
        case 6:                           /* BI_DIR_IIOP: a count of addresses */
            if (len < 8 || data[0] > 1) return -1;
            break;
        case 0x50544300u:                 /* a vendor's: anything goes */
            break;
        default:
            break;
        }
    }
    return 0;
}

static int repository_id_matches(const uint8_t *id, uint32_t len) {
    return (len == sizeof "IDL:Demo/Strings:1.0" && memcmp(id, "IDL:Demo/Strings:1.0", len) == 0) ||
           (len == sizeof "IDL:omg.org/CORBA/Object:1.0" &&
            memcmp(id, "IDL:omg.org/CORBA/Object:1.0", len) == 0);
}

/* echo_deep's string, folded to lower case in place; the planted fault
 * (see the top of the file). */
static void fold(uint8_t *s, uint32_t len) {
    char folded[16];
    if (len > 2 && (s[0] & 0x80)) {
        if (s[1] & 0x80) {
            memcpy(folded, s, len);
            memcpy(s, folded, len);
            return;
        }
    }
    for (uint32_t i = 0; i < len; i++)
        if (s[i] >= 'A' && s[i] <= 'Z') s[i] += 'a' - 'A';
}

static int request(int fd, struct reader *r, int minor) {
    uint32_t id, key_len, op_len, principal_len;
    const uint8_t *key, *op;
    int codesets = 0, response = 1;
    if (minor < 2) {
        if (service_contexts(r, &codesets) < 0) return message_error(fd, minor);
        id = rd_uint(r, 4);
        response = rd_uint(r, 1) != 0;
        if (minor == 1) r->pos += 3;
        key = rd_seq(r, &key_len);
        op = rd_seq(r, &op_len);
        rd_seq(r, &principal_len);
    } else {
        id = rd_uint(r, 4);
        response = (rd_uint(r, 1) & 3) != 0;
        r->pos += 3;
        uint32_t disc = rd_uint(r, 2);
        if (disc != 0) {
            if (r->bad) return message_error(fd, minor);
            return system_exception(fd, minor, id, "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0", 0);
        }
        key = rd_seq(r, &key_len);
        op = rd_seq(r, &op_len);
        if (service_contexts(r, &codesets) < 0) return message_error(fd, minor);
        if (r->pos < r->n) rd_align(r, 8);
    }
    if (r->bad || op_len == 0 || op[op_len - 1] != 0) return message_error(fd, minor);
    if (key_len != strlen(KEY) || memcmp(key, KEY, key_len) != 0) {
        if (!response) return 0;
        return system_exception(fd, minor, id, "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0", 0);
    }
    const char *name = (const char *)op;
    struct writer w;
    if (strcmp(name, "_non_existent") == 0 || strcmp(name, "_not_existent") == 0) {
        if (!response) return 0;
        reply_head(&w, minor, id, NO_EXCEPTION);
        w.d[w.n++] = 0;
        return finish(fd, &w);
    }
    if (strcmp(name, "_is_a") == 0 || strcmp(name, "echo") == 0 ||
        strcmp(name, "echo_deep") == 0) {
        uint32_t len;
        uint8_t *arg = rd_seq(r, &len);
        if (r->bad || len == 0)
            return system_exception(fd, minor, id, "IDL:omg.org/CORBA/MARSHAL:1.0", 1);
        if (!response) return 0;
        reply_head(&w, minor, id, NO_EXCEPTION);
        if (minor >= 2) wr_align(&w, 8);
        if (name[0] == '_') {
            w.d[w.n++] = (uint8_t)repository_id_matches(arg, len);
        } else {
            if (strcmp(name, "echo_deep") == 0) fold((uint8_t *)arg, len);
            wr_string(&w, (const char *)arg, len - 1);
        }
        return finish(fd, &w);
    }
    if (!response) return 0;
    return system_exception(fd, minor, id, "IDL:omg.org/CORBA/BAD_OPERATION:1.0",
                            codesets ? 2 : 0);
}

static int locate_request(int fd, struct reader *r, int minor) {
    uint32_t id = rd_uint(r, 4), key_len = 0;
    const uint8_t *key = NULL;
    if (minor < 2 || rd_uint(r, 2) == 0)
        key = rd_seq(r, &key_len);
    if (r->bad) return message_error(fd, minor);
    struct writer w;
    start(&w, minor, LOCATE_REPLY);
    wr_ulong(&w, id);
    wr_ulong(&w, key != NULL && key_len == strlen(KEY) && memcmp(key, KEY, key_len) == 0);
    return finish(fd, &w);
}

static int read_full(int fd, uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t got = recv(fd, p, n, 0);
        if (got <= 0) return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static void *serve(void *arg) {
    int fd = (int)(intptr_t)arg;
    uint8_t header[12];
    while (read_full(fd, header, 12) == 0) {
        if (memcmp(header, "GIOP", 4) != 0 || header[4] != 1 || header[5] > 2) {
            message_error(fd, 0);
            break;
        }
        int minor = header[5];
        int le = minor == 0 ? header[6] != 0 : (header[6] & 1);
        struct reader h = { header, 12, 8, le, 0 };
        uint32_t size = rd_uint(&h, 4);
        if (size > MAX_BODY) {            /* read (and drop) it whole, then refuse it */
            uint8_t sink[4096];
            while (size > 0 && read_full(fd, sink, size < sizeof sink ? size : sizeof sink) == 0)
                size -= size < sizeof sink ? size : sizeof sink;
            if (size == 0) message_error(fd, minor);
            break;
        }
        uint8_t *body = malloc(size ? size : 1);
        if (body == NULL || read_full(fd, body, size) < 0) { free(body); break; }
        struct reader r = { body, size, 0, le, 0 };
        int status;
        if (minor == 0 && header[6] > 1) {          /* a byte order octet not 0 or 1 */
            free(body);
            message_error(fd, minor);
            break;
        }
        switch (header[7]) {
        case REQUEST: status = request(fd, &r, minor); break;
        case LOCATE_REQUEST: status = locate_request(fd, &r, minor); break;
        case CANCEL: status = size == 4 ? 0 : message_error(fd, minor); break;
        case CLOSE: status = -1; break;
        case MESSAGE_ERROR: status = -1; break;
        default: status = message_error(fd, minor); break;   /* replies, fragments */
        }
        free(body);
        if (status < 0) break;
    }
    close(fd);
    return NULL;
}

static volatile unsigned long ticks;

static void tick(void) { ticks++; }

static void *ticker(void *arg) {
    useconds_t period = (useconds_t)(intptr_t)arg * 1000;
    for (;;) {
        usleep(period);
        tick();
    }
    return NULL;
}

static void *watch_stdin(void *arg) {
    (void)arg;
    char c;
    while (read(0, &c, 1) > 0) {}
    _exit(0);
}

int main(int argc, char **argv) {
    pthread_t t;
    if (argc == 3 && strcmp(argv[1], "--tick") == 0)
        pthread_create(&t, NULL, ticker, (void *)(intptr_t)atoi(argv[2]));
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 64) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &alen) < 0) {
        perror("giop_echo");
        return 2;
    }
    printf("corbaloc:iiop:1.2@127.0.0.1:%d/%s\n", ntohs(a.sin_port), KEY);
    fflush(stdout);
    pthread_create(&t, NULL, watch_stdin, NULL);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)c) != 0) { close(c); continue; }
        pthread_detach(t);
    }
}
