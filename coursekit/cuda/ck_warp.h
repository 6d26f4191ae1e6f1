// coursekit CUDA emulator: what the memory accesses of 32-thread warps cost (included by ck_count.cpp).
//
// Why: on a GPU the 32 threads of a warp issue each load or store together,
// and the hardware serves the warp's request in units: 32-byte sectors of
// global memory, one pass over the 32 four-byte banks of shared memory per
// "wavefront", one update at a time per address for atomics.  Whether a
// kernel's accesses are coalesced, conflict-free or contended is a count of
// those units, and the emulator can make that count exactly.
//
// How: the emulator runs the threads of a block one after another, so the
// accesses of a warp arrive lane by lane, not together.  Each access is
// keyed by (warp, instruction address, how many times this thread has run
// that instruction before): lane 5's third pass through a load and lane 6's
// third pass through it are one warp request, as they would be on a GPU
// where the lanes run in step.  Lanes that skip an access (an `if`) are not
// part of its request, as on a GPU.  When the block ends, every request is
// priced:
//   global  -> distinct 32-byte sectors and 128-byte lines it touches;
//   shared  -> wavefronts = the largest number of distinct 4-byte words any
//              one bank (word index mod 32) must deliver (same word: broadcast);
//   atomic  -> the largest number of lanes updating one address (they serialize).
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <algorithm>
#include <unordered_map>
#include <vector>

struct ck_uint3 { unsigned x, y, z; };
extern "C" ck_uint3* __ck_cur;          // really __ck_fiber_pub*, whose first member is the thread index
extern "C" ck_uint3 __ck_blockIdx;
extern "C" ck_uint3 __ck_gridDim, __ck_blockDim;
extern "C" char* __ck_dyn_smem;
extern "C" char __start_ck_shared[] __attribute__((weak));
extern "C" char __stop_ck_shared[] __attribute__((weak));

namespace warp {

enum Kind { LOAD = 0, STORE = 1, ATOMIC = 2 };
// Counters per global argument: for LOAD and STORE {requests, sectors, lines, bytes},
// then ATOMIC {requests, lanes, serialized}.
constexpr int kGlobalFields = 11;
// Shared memory: LOAD/STORE {requests, wavefronts}, ATOMIC {requests, lanes, serialized}.
constexpr int kSharedFields = 7;
constexpr int kMaxArgs = 64;

struct Access { uintptr_t addr; uint32_t size; };
struct Request {                  // one access per lane at most: a lane's passes are separate requests
    int kind = 0, space = 0;      // space: argument index, or -1 for shared memory
    uint32_t n = 0;
    Access lanes[32];
    const Access* begin() const { return lanes; }
    const Access* end() const { return lanes + n; }
};
struct Key {
    uint64_t warp_pc, occurrence;
    bool operator==(const Key& o) const { return warp_pc == o.warp_pc && occurrence == o.occurrence; }
};
struct KeyHash {
    size_t operator()(const Key& k) const { return k.warp_pc * 0x9E3779B97F4A7C15ull ^ k.occurrence; }
};

bool g_on = false;
long long g_block = -1;
size_t g_dyn_bytes = 0;                 // dynamic shared memory of this launch (at __ck_dyn_smem)
// Per thread of the block: (instruction address, passes so far), searched linearly (a kernel has few
// load and store sites; this is several times faster than one hash map for all threads).
std::vector<std::vector<std::pair<uint64_t, uint32_t>>> g_seen(1024);
std::unordered_map<Key, Request, KeyHash> g_requests;
unsigned long long g_global[kMaxArgs][kGlobalFields];
unsigned long long g_shared[kSharedFields];

inline bool in_shared(uintptr_t a, uintptr_t* base) {
    const uintptr_t lo = (uintptr_t)__start_ck_shared, hi = (uintptr_t)__stop_ck_shared;
    if (a >= lo && a < hi) { *base = lo; return true; }
    const uintptr_t dyn = (uintptr_t)__ck_dyn_smem;
    if (a >= dyn && a < dyn + g_dyn_bytes) { *base = dyn; return true; }
    return false;
}

void price(const Request& r) {
    if (r.kind == ATOMIC) {
        std::vector<uintptr_t> addrs;
        for (const Access& a : r) addrs.push_back(a.addr);
        std::sort(addrs.begin(), addrs.end());
        size_t most = 0;
        for (size_t i = 0, j; i < addrs.size(); i = j) {
            for (j = i; j < addrs.size() && addrs[j] == addrs[i]; ++j) {}
            most = std::max(most, j - i);
        }
        unsigned long long* c = r.space < 0 ? g_shared + 4 : g_global[r.space] + 8;
        c[0] += 1; c[1] += r.n; c[2] += most;
        return;
    }
    if (r.space < 0) {                                    // shared memory: banks
        std::vector<uintptr_t> words;
        for (const Access& a : r)
            for (uintptr_t w = a.addr >> 2; w <= (a.addr + a.size - 1) >> 2; ++w) words.push_back(w);
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        unsigned per_bank[32] = {0};
        unsigned most = 0;
        for (uintptr_t w : words) most = std::max(most, ++per_bank[w & 31]);
        g_shared[2 * r.kind] += 1;
        g_shared[2 * r.kind + 1] += most;
        return;
    }
    std::vector<uintptr_t> sectors, lines;                // global memory: sectors and lines
    unsigned long long bytes = 0;
    for (const Access& a : r) {
        bytes += a.size;
        for (uintptr_t s = a.addr >> 5; s <= (a.addr + a.size - 1) >> 5; ++s) sectors.push_back(s);
    }
    std::sort(sectors.begin(), sectors.end());
    sectors.erase(std::unique(sectors.begin(), sectors.end()), sectors.end());
    for (uintptr_t s : sectors)
        if (lines.empty() || lines.back() != s >> 2) lines.push_back(s >> 2);
    unsigned long long* c = g_global[r.space] + 4 * r.kind;
    c[0] += 1; c[1] += sectors.size(); c[2] += lines.size(); c[3] += bytes;
}

void flush() {
    for (const auto& kv : g_requests) price(kv.second);
    g_requests.clear();
    for (auto& sites : g_seen) sites.clear();
}

// One lane's access; `space` is the argument index (global) or -1 (shared).
// Shared addresses are made relative to their region, so bank numbers are
// those of a GPU, where shared memory starts at bank 0.
void record(int kind, int space, uintptr_t addr, uint32_t size, const void* pc) {
    if (!__ck_cur) return;
    const long long block = __ck_blockIdx.x + (long long)__ck_gridDim.x *
                            (__ck_blockIdx.y + (long long)__ck_gridDim.y * __ck_blockIdx.z);
    if (block != g_block) { flush(); g_block = block; }
    const uint64_t thread = __ck_cur->x + (uint64_t)__ck_blockDim.x * (__ck_cur->y + (uint64_t)__ck_blockDim.y * __ck_cur->z);
    const uint64_t where = (uint64_t)(uintptr_t)pc & 0xFFFFFFFFFFFFull;
    if (thread >= g_seen.size()) g_seen.resize(thread + 1);
    uint32_t pass = 0;
    auto& sites = g_seen[thread];
    auto site = std::find_if(sites.begin(), sites.end(), [&](const std::pair<uint64_t, uint32_t>& e) { return e.first == where; });
    if (site == sites.end()) sites.emplace_back(where, 1);
    else pass = site->second++;
    Request& r = g_requests[Key{where | (thread / 32) << 48 | (uint64_t)kind << 62,
                                pass | (uint64_t)(space + 1) << 32}];
    if (r.n == 0) { r.kind = kind; r.space = space; }
    if (r.n < 32) r.lanes[r.n++] = Access{addr, size};
}

}  // namespace warp
