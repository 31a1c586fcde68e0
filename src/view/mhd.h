/*
 * mhd.h: libmicrohttpd, loaded when the viewer starts rather than linked.
 * Linked, it (and GnuTLS behind it) cost every memtally command about a
 * millisecond at start, `memtally record` included.  The functions the
 * server uses, with libmicrohttpd's own types.
 */
#ifndef MTL_VIEW_MHD_H
#define MTL_VIEW_MHD_H

#include <microhttpd.h>
#include <stddef.h>

struct mtl_mhd {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
};

/* The loaded library's functions (loaded once), or NULL with why in err
 * (cap bytes). */
const struct mtl_mhd *mtl_mhd_load(char *err, size_t cap);

#endif
