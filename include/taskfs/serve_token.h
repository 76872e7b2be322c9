/* taskfs: what `taskfs serve` keeps in the store: its token and its log
 * (core/serve.c; included by taskfs.h). */
#ifndef TASKFS_SERVE_TOKEN_H
#define TASKFS_SERVE_TOKEN_H

#include <stddef.h>

#include "taskfs/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A token is TFS_TOKEN_MIN to TFS_TOKEN_MAX characters of A-Z a-z 0-9 . _
 * ~ - (URL-safe: it goes into a login URL as it is). */
#define TFS_TOKEN_MIN 32
#define TFS_TOKEN_MAX 256
int tfs_token_valid(const char *s, size_t len);
/* The store's serve token (<state>/serve.token) into out (TFS_TOKEN_MAX +
 * 1 bytes): read when the file exists, else made (32 random bytes, hex,
 * mode 0600, written durably; of two servers starting at once one token
 * wins and both read it) with *created = 1. A token file is used only if
 * it is a regular file of the caller's that nobody else may read or write
 * (else TFS_EFOREIGN / TFS_EUNSAFE) holding one token line (else
 * TFS_ECORRUPT); why says what is wrong and what to do. */
int tfs_serve_token(tfs_store_t *store, char *out, size_t outlen, int *created, char *why,
                    size_t whylen);
/* The same checks and format for a token file the user names
 * (--token-file); the path may be anywhere. */
int tfs_token_file_read(const char *path, char *out, size_t outlen, char *why, size_t whylen);
/* The path of the store's token file, for messages. */
int tfs_serve_token_path(const tfs_store_t *store, char *buf, size_t len);
/* Opens <state>/serve.log for appending (0600; started afresh once past
 * 1 MiB): where a server in the background writes what it would say on
 * stderr. Returns the fd or a negative error. */
int tfs_serve_log_open(tfs_store_t *store);

#ifdef __cplusplus
}
#endif

#endif /* TASKFS_SERVE_TOKEN_H */
