/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The list of rooms (lib/plan/rooms.h): the one file above every room, where a new room is
 * registered.  Nothing else of the library includes two rooms.
 */
#include "ep_group.h"
#include "m2n_engine.h"
#include "rooms.h"

const ncclx_room_t *const ncclx_rooms[] = {&ncclx_ep_room, &ncclx_m2n_room, NULL};

size_t ncclx_host_object_bytes(ncclx_host_object_t kind)
{
    switch (kind) {
    case NCCLX_HOST_EP_GROUP:
        return sizeof(ncclx_ep_group_t);
    case NCCLX_HOST_EP_HANDLE:
        return sizeof(ncclx_ep_handle_t);
    case NCCLX_HOST_M2N_ENGINE:
        return ncclx_m2n_engine_bytes();
    case NCCLX_HOST_M2N_ENTRY:
        return ncclx_m2n_entry_bytes();
    }
    return 0;
}
