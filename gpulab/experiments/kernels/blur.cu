// Image convolution on planar float32 images (C planes of H x W), one block per output tile.
//
// Compile-time constants (passed as -D options; the host compiles one module per set):
//   R   radius (1..15): the kernel is (2R+1) wide
//   TW  tile width in output pixels (a multiple of 4), TH tile height
// Border mode: clamp (a pixel outside the image takes the value of the nearest edge pixel),
// the same as scipy.ndimage mode="nearest" and torch F.pad(mode="replicate").
//
// blur_sep:    separable kernels (gaussian, box). The block stages its input tile plus a halo in
//              shared memory once, runs the row pass into a second shared tile, then the column
//              pass straight to global memory: each pixel is read from DRAM about once and written
//              once, with no intermediate image.
// blur_sep_v4: the same with 16-byte loads and stores (float4) and four outputs per thread in
//              each pass; needs W % 4 == 0. The halo on the left is widened to HL (R rounded up to
//              a multiple of 4) so that every float4 of the tile is aligned.
// blur_sep_reg: separable, R <= 4: one shared tile and the column pass in registers (see the
//              kernel); the fastest at small radii (5x5: 0.86 of an H100's calibrated copy).
// blur_2d:     non-separable kernels (sharpen, edge): one shared tile, (2R+1)^2 taps per output.

#ifndef R
#define R 2
#endif
#ifndef TW
#define TW 64
#endif
#ifndef TH
#define TH 16
#endif
#define K (2 * R + 1)
#define NT 256
#define HL (((R) + 3) / 4 * 4)

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }

#ifndef ONLY_REG
extern "C" __global__ void __launch_bounds__(NT)
blur_sep(const float* __restrict__ src, float* __restrict__ dst, const float* __restrict__ w,
         int width, int height) {
    __shared__ float in_s[TH + 2 * R][TW + 2 * R];
    __shared__ float row_s[TH + 2 * R][TW];
    const size_t plane = (size_t)width * height * blockIdx.z;
    src += plane;
    dst += plane;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    float wk[K];
#pragma unroll
    for (int k = 0; k < K; ++k) wk[k] = w[k];

    constexpr int IN_W = TW + 2 * R, IN_N = (TH + 2 * R) * IN_W;
#pragma unroll 4
    for (int i = threadIdx.x; i < IN_N; i += NT) {
        const int r = i / IN_W, c = i % IN_W;
        const int gy = clampi(y0 - R + r, 0, height - 1), gx = clampi(x0 - R + c, 0, width - 1);
        in_s[r][c] = src[(size_t)gy * width + gx];
    }
    __syncthreads();
    constexpr int ROW_N = (TH + 2 * R) * TW;
#pragma unroll 4
    for (int i = threadIdx.x; i < ROW_N; i += NT) {
        const int r = i / TW, c = i % TW;
        float acc = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) acc = fmaf(wk[k], in_s[r][c + k], acc);
        row_s[r][c] = acc;
    }
    __syncthreads();
#pragma unroll 4
    for (int i = threadIdx.x; i < TH * TW; i += NT) {
        const int r = i / TW, c = i % TW;
        const int gy = y0 + r, gx = x0 + c;
        float acc = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) acc = fmaf(wk[k], row_s[r + k][c], acc);
        if (gy < height && gx < width) dst[(size_t)gy * width + gx] = acc;
    }
}

extern "C" __global__ void __launch_bounds__(NT)
blur_sep_v4(const float* __restrict__ src, float* __restrict__ dst, const float* __restrict__ w,
            int width, int height) {
    constexpr int IN_W = TW + 2 * HL;  // a multiple of 4: every row of the tile is float4-aligned
    __shared__ __align__(16) float in_s[TH + 2 * R][IN_W];
    __shared__ __align__(16) float row_s[TH + 2 * R][TW];
    const size_t plane = (size_t)width * height * blockIdx.z;
    src += plane;
    dst += plane;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    float wk[K];
#pragma unroll
    for (int k = 0; k < K; ++k) wk[k] = w[k];

    // With W % 4 == 0 and x0 - HL a multiple of 4, a float4 is wholly inside the row or wholly
    // outside it; outside ones repeat the edge pixel (clamp).
    constexpr int IN_W4 = IN_W / 4, IN_N4 = (TH + 2 * R) * IN_W4;
#pragma unroll 4
    for (int i = threadIdx.x; i < IN_N4; i += NT) {
        const int r = i / IN_W4, c4 = i % IN_W4;
        const int gy = clampi(y0 - R + r, 0, height - 1);
        const int gx = x0 - HL + 4 * c4;
        const float* row = src + (size_t)gy * width;
        float4 v;
        if (gx >= 0 && gx + 3 < width) {
            v = __ldg(reinterpret_cast<const float4*>(row + gx));
        } else {
            const float e = row[gx < 0 ? 0 : width - 1];
            v = make_float4(e, e, e, e);
        }
        *reinterpret_cast<float4*>(&in_s[r][4 * c4]) = v;
    }
    __syncthreads();
    // Row pass: four adjacent outputs per thread from a window of 4 + 2R values.
    constexpr int TW4 = TW / 4, ROW_N4 = (TH + 2 * R) * TW4;
#pragma unroll 2
    for (int i = threadIdx.x; i < ROW_N4; i += NT) {
        const int r = i / TW4, c = 4 * (i % TW4);
        float win[4 + 2 * R];
#pragma unroll
        for (int j = 0; j < 4 + 2 * R; ++j) win[j] = in_s[r][c + HL - R + j];
        float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            o.x = fmaf(wk[k], win[k], o.x);
            o.y = fmaf(wk[k], win[k + 1], o.y);
            o.z = fmaf(wk[k], win[k + 2], o.z);
            o.w = fmaf(wk[k], win[k + 3], o.w);
        }
        *reinterpret_cast<float4*>(&row_s[r][c]) = o;
    }
    __syncthreads();
    // Column pass: four adjacent outputs per thread, one 16-byte store.
#pragma unroll 2
    for (int i = threadIdx.x; i < TH * TW4; i += NT) {
        const int r = i / TW4, c = 4 * (i % TW4);
        const int gy = y0 + r, gx = x0 + c;
        float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const float4 v = *reinterpret_cast<const float4*>(&row_s[r + k][c]);
            o.x = fmaf(wk[k], v.x, o.x);
            o.y = fmaf(wk[k], v.y, o.y);
            o.z = fmaf(wk[k], v.z, o.z);
            o.w = fmaf(wk[k], v.w, o.w);
        }
        if (gy < height && gx < width) {
            *reinterpret_cast<float4*>(dst + (size_t)gy * width + gx) = o;
        }
    }
}

#endif  // ONLY_REG

// blur_sep_reg: separable, W % 4 == 0, TW == 128. The tile (plus halo) is staged in shared
// memory with float4 loads as in blur_sep_v4, but there is no second shared tile: 32 threads
// across (four columns each) by 8 down (TH / 8 rows each); a thread runs the row pass over
// its rows and the 2R rows around them into registers and sums the column pass there, then
// writes with streaming stores (the output is not read again: it should not evict the input
// halo other blocks still need from L2). Half the shared memory of blur_sep_v4, no second
// barrier, and every output written once as a float4.
#define RPT (TH / 8)
#ifndef MINB
#define MINB 1
#endif
extern "C" __global__ void __launch_bounds__(NT, MINB)
blur_sep_reg(const float* __restrict__ src, float* __restrict__ dst, const float* __restrict__ w,
             int width, int height) {
    constexpr int IN_W = TW + 2 * HL;
    __shared__ __align__(16) float in_s[TH + 2 * R][IN_W];
    const size_t plane = (size_t)width * height * blockIdx.z;
    src += plane;
    dst += plane;
#ifdef YMAJOR
    // blockIdx.x walks down a column of tiles: the next block's halo rows are this one's
    const int x0 = blockIdx.y * TW, y0 = blockIdx.x * TH;
#else
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
#endif
    float wk[K];
#pragma unroll
    for (int k = 0; k < K; ++k) wk[k] = w[k];
    constexpr int IN_W4 = IN_W / 4, IN_N4 = (TH + 2 * R) * IN_W4;
#pragma unroll 4
    for (int i = threadIdx.x; i < IN_N4; i += NT) {
        const int r = i / IN_W4, c4 = i % IN_W4;
        const int gy = clampi(y0 - R + r, 0, height - 1);
        const int gx = x0 - HL + 4 * c4;
        const float* row = src + (size_t)gy * width;
        float4 v;
        if (gx >= 0 && gx + 3 < width) {
            v = __ldg(reinterpret_cast<const float4*>(row + gx));
        } else {
            const float e = row[gx < 0 ? 0 : width - 1];
            v = make_float4(e, e, e, e);
        }
        *reinterpret_cast<float4*>(&in_s[r][4 * c4]) = v;
    }
    __syncthreads();
    const int c = 4 * (threadIdx.x % 32), r0 = (threadIdx.x / 32) * RPT;
    float4 acc[RPT];
#pragma unroll
    for (int o = 0; o < RPT; ++o) acc[o] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int j = 0; j < RPT + 2 * R; ++j) {
        float win[4 + 2 * R];
#pragma unroll
        for (int q = 0; q < 4 + 2 * R; ++q) win[q] = in_s[r0 + j][c + HL - R + q];
        float4 rp = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            rp.x = fmaf(wk[k], win[k], rp.x);
            rp.y = fmaf(wk[k], win[k + 1], rp.y);
            rp.z = fmaf(wk[k], win[k + 2], rp.z);
            rp.w = fmaf(wk[k], win[k + 3], rp.w);
        }
#pragma unroll
        for (int o = 0; o < RPT; ++o) {
            const int k = j - o;  // row j of the window is tap k of output row o
            if (k >= 0 && k < K) {
                acc[o].x = fmaf(wk[k], rp.x, acc[o].x);
                acc[o].y = fmaf(wk[k], rp.y, acc[o].y);
                acc[o].z = fmaf(wk[k], rp.z, acc[o].z);
                acc[o].w = fmaf(wk[k], rp.w, acc[o].w);
            }
        }
    }
    const int gx = x0 + c;
#pragma unroll
    for (int o = 0; o < RPT; ++o) {
        const int gy = y0 + r0 + o;
        if (gy < height && gx < width) {
            __stcs(reinterpret_cast<float4*>(dst + (size_t)gy * width + gx), acc[o]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(NT)
blur_2d(const float* __restrict__ src, float* __restrict__ dst, const float* __restrict__ w,
        int width, int height) {
    __shared__ float in_s[TH + 2 * R][TW + 2 * R];
    const size_t plane = (size_t)width * height * blockIdx.z;
    src += plane;
    dst += plane;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    constexpr int IN_W = TW + 2 * R, IN_N = (TH + 2 * R) * IN_W;
#pragma unroll 4
    for (int i = threadIdx.x; i < IN_N; i += NT) {
        const int r = i / IN_W, c = i % IN_W;
        const int gy = clampi(y0 - R + r, 0, height - 1), gx = clampi(x0 - R + c, 0, width - 1);
        in_s[r][c] = src[(size_t)gy * width + gx];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TH * TW; i += NT) {
        const int r = i / TW, c = i % TW;
        const int gy = y0 + r, gx = x0 + c;
        float acc = 0.f;
        for (int ky = 0; ky < K; ++ky) {
#pragma unroll
            for (int kx = 0; kx < K; ++kx) {
                // Every thread of the warp reads the same weight: one broadcast from L1.
                acc = fmaf(__ldg(w + ky * K + kx), in_s[r + ky][c + kx], acc);
            }
        }
        if (gy < height && gx < width) dst[(size_t)gy * width + gx] = acc;
    }
}
