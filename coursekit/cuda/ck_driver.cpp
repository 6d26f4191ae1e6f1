// coursekit checked mode: a stand-alone program, built with AddressSanitizer
// around one student kernel, that runs a single launch described in a file.
//
// Why a separate process: an out-of-bounds write inside the notebook's own
// process would corrupt it or kill the Jupyter kernel.  Here AddressSanitizer
// stops at the first bad access and prints a report; the Python side turns it
// into an exception and the notebook lives on.  Every array is malloc'ed with
// exactly its size, so even a one-element overrun hits a red zone.
//
// Request (little-endian): u32 entry, u32 grid[3], u32 block[3], u64 dynamic
// shared bytes, u32 orders (bit 0 forward, bit 1 reverse), u32 name length +
// name, u32 nparams + one u64 slot each, u32 narrays + (u32 param, u64 bytes,
// data) each.  Response per order: i32 rc, u32 + error text, u32 + printf
// text, then each array's bytes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

struct uint3 { unsigned int x, y, z; };
extern "C" void (*const __ck_entries[])(const char*);
extern "C" const int __ck_n_entries;
extern "C" uint3* __ck_cur;   // really __ck_fiber_pub*, whose first member is the thread index
extern "C" uint3 __ck_blockIdx;
extern "C" int ck_launch(void (*)(const char*), const char*, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, size_t, int, const char*, int, double);
extern "C" const char* ck_last_error();
extern "C" void ck_set_stack_kib(size_t);
extern "C" const char* ck_printf_output();

// Called by AddressSanitizer before it prints a report: say which CUDA thread did it.
extern "C" void __asan_on_error() {
    if (__ck_cur)
        fprintf(stderr, "CK_WHERE block (%u,%u,%u) thread (%u,%u,%u)\n", __ck_blockIdx.x, __ck_blockIdx.y,
                __ck_blockIdx.z, __ck_cur->x, __ck_cur->y, __ck_cur->z);
}

static FILE* g_in;
template <class T> static T get() {
    T v;
    if (fread(&v, sizeof v, 1, g_in) != 1) { fprintf(stderr, "CK_PROTOCOL short request\n"); exit(3); }
    return v;
}
static std::string get_bytes(size_t n) {
    std::string s(n, '\0');
    if (n && fread(&s[0], 1, n, g_in) != n) { fprintf(stderr, "CK_PROTOCOL short request\n"); exit(3); }
    return s;
}
template <class T> static void put(FILE* f, T v) { fwrite(&v, sizeof v, 1, f); }
static void put_text(FILE* f, const char* s) {
    uint32_t n = (uint32_t)strlen(s);
    put(f, n);
    fwrite(s, 1, n, f);
}

int main(int argc, char** argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s request response\n", argv[0]); return 2; }
    if (const char* kib = getenv("COURSEKIT_CUDA_STACK_KB")) ck_set_stack_kib((size_t)atol(kib));
    g_in = fopen(argv[1], "rb");
    if (!g_in) { perror(argv[1]); return 2; }
    uint32_t entry = get<uint32_t>();
    uint32_t g[3], b[3];
    for (auto& v : g) v = get<uint32_t>();
    for (auto& v : b) v = get<uint32_t>();
    uint64_t dyn = get<uint64_t>();
    uint32_t orders = get<uint32_t>();
    std::string name = get_bytes(get<uint32_t>());
    uint32_t nparams = get<uint32_t>();
    std::vector<uint64_t> slots(nparams ? nparams : 1);
    for (uint32_t i = 0; i < nparams; ++i) slots[i] = get<uint64_t>();
    uint32_t narrays = get<uint32_t>();
    std::vector<std::string> original(narrays);
    std::vector<char*> bufs(narrays);
    std::vector<uint64_t> sizes(narrays);
    for (uint32_t k = 0; k < narrays; ++k) {
        uint32_t param = get<uint32_t>();
        sizes[k] = get<uint64_t>();
        original[k] = get_bytes(sizes[k]);
        bufs[k] = (char*)malloc(sizes[k] ? sizes[k] : 1);
        slots[param] = (uint64_t)(uintptr_t)bufs[k];
        fprintf(stderr, "CK_ARRAY %u %p %llu\n", param, (void*)bufs[k], (unsigned long long)sizes[k]);
    }
    fclose(g_in);
    if ((int)entry >= __ck_n_entries) { fprintf(stderr, "CK_PROTOCOL bad entry\n"); return 3; }
    FILE* out = fopen(argv[2], "wb");
    if (!out) { perror(argv[2]); return 2; }
    for (int reverse = 0; reverse < 2; ++reverse) {
        if (!(orders >> reverse & 1u)) continue;
        for (uint32_t k = 0; k < narrays; ++k) memcpy(bufs[k], original[k].data(), sizes[k]);
        int rc = ck_launch(__ck_entries[entry], (const char*)slots.data(), g[0], g[1], g[2], b[0], b[1], b[2],
                           dyn, reverse, name.c_str(), 0, 0.0);
        put<int32_t>(out, rc);
        put_text(out, rc < 0 ? ck_last_error() : "");
        put_text(out, rc > 0 ? ck_printf_output() : "");
        for (uint32_t k = 0; k < narrays; ++k) fwrite(bufs[k], 1, sizes[k], out);
        fflush(out);
        if (rc < 0) break;
    }
    fclose(out);
    return 0;
}
