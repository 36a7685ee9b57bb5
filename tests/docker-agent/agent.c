/* A tiny OFC agent for the container tests: the only file of a FROM-scratch image, built with
 * `gcc -static`. It serves the OFC agent API on 0.0.0.0:$OFC_PORT (8080 without it), one
 * request per connection:
 *   GET  /ofc/info         who it is
 *   POST /ofc/should-wake  wakes for messages from @user
 *   POST /ofc/respond      "container heard: <last message> (pid N)"
 * As a container's first process it handles SIGTERM itself (PID 1 has no default handlers). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_REQUEST (1 << 20)

static const char INFO[] =
    "{\"id\":\"@dockecho\",\"name\":\"Docker Echo\",\"tagline\":\"Echoes from a container\","
    "\"description\":\"An OFC agent in a FROM-scratch image.\",\"activation\":\"mention\"}";

static void on_term(int sig) {
    (void)sig;
    _exit(0);
}

static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static void reply(int fd, int status, const char *body) {
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, status == 200 ? "OK" : "Not Found", strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

/* The raw (still JSON-escaped) value of the last "content":"…" in body, or "". */
static char *last_content(const char *body) {
    const char *key = "\"content\":\"", *p = body, *found = NULL;
    while ((p = strstr(p, key)) != NULL) {
        found = p + strlen(key);
        p = found;
    }
    if (!found) return strdup("");
    const char *e = found;
    while (*e && *e != '"') e += (*e == '\\' && e[1]) ? 2 : 1;
    return strndup(found, (size_t)(e - found));
}

static void handle(int fd) {
    char *buf = malloc(MAX_REQUEST + 1);
    size_t len = 0;
    char *body = NULL;
    long want = -1;
    if (!buf) return;
    for (;;) {
        ssize_t r = read(fd, buf + len, MAX_REQUEST - len);
        if (r <= 0) break;
        len += (size_t)r;
        buf[len] = 0;
        if (!body) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) {
                if (len == MAX_REQUEST) break;
                continue;
            }
            body = end + 4;
            want = 0;
            for (char *h = strstr(buf, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n")) {
                if (strncasecmp(h + 2, "content-length:", 15) == 0) want = atol(h + 17);
            }
        }
        if ((long)(len - (size_t)(body - buf)) >= want || len == MAX_REQUEST) break;
    }
    buf[len] = 0;
    if (!body) {
        free(buf);
        return;
    }
    if (strncmp(buf, "GET /ofc/info ", 14) == 0) {
        reply(fd, 200, INFO);
    } else if (strncmp(buf, "POST /ofc/should-wake ", 22) == 0) {
        reply(fd, 200, strstr(body, "\"from\":\"@user\"") ? "{\"wake\":true}" : "{\"wake\":false}");
    } else if (strncmp(buf, "POST /ofc/respond ", 18) == 0) {
        char *said = last_content(body);
        char *out = malloc(strlen(said) + 128);
        if (out) {
            sprintf(out, "{\"content\":\"container heard: %s (pid %d)\"}", said, (int)getpid());
            reply(fd, 200, out);
            free(out);
        }
        free(said);
    } else {
        reply(fd, 404, "{\"error\":\"not found\"}");
    }
    free(buf);
}

int main(void) {
    const char *port = getenv("OFC_PORT");
    int one = 1, s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    signal(SIGPIPE, SIG_IGN);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((unsigned short)atoi(port && *port ? port : "8080"));
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 16) != 0) {
        perror("ofc docker agent: cannot listen");
        return 1;
    }
    fprintf(stderr, "ofc docker agent listening on %s\n", port && *port ? port : "8080");
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        handle(c);
        close(c);
    }
}
