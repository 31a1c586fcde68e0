/*
 * protobuf_c.c: libprotobuf-c's functions (memtally export --format pprof), loaded on first use
 * (lazy.h).
 */
#pragma GCC visibility push(hidden)
#include <protobuf-c/protobuf-c.h>
#include "lazy/lazy.h"

static struct mtl_lazy_lib lib_pb = {"libprotobuf-c.so.1", "libprotobuf-c1", 0};

MTL_LAZY_VOID(lib_pb, protobuf_c_message_free_unpacked,
              (ProtobufCMessage *message, ProtobufCAllocator *allocator), (message, allocator))
MTL_LAZY(lib_pb, size_t, protobuf_c_message_get_packed_size, (const ProtobufCMessage *message),
         (message))
MTL_LAZY(lib_pb, size_t, protobuf_c_message_pack, (const ProtobufCMessage *message, uint8_t *out),
         (message, out))
MTL_LAZY(lib_pb, size_t, protobuf_c_message_pack_to_buffer,
         (const ProtobufCMessage *message, ProtobufCBuffer *buffer), (message, buffer))
MTL_LAZY(lib_pb, ProtobufCMessage *, protobuf_c_message_unpack,
         (const ProtobufCMessageDescriptor *descriptor, ProtobufCAllocator *allocator, size_t len,
          const uint8_t *data),
         (descriptor, allocator, len, data))

/* The generated code's default for empty strings.  Ours, not the
 * library's: the library compares a string with its field's default
 * (from our descriptors), never with its own copy. */
const char protobuf_c_empty_string[] = "";
