//! A sentence-embedding model's forward pass written out for one text at a time: BERT's
//! embeddings, its encoder layers and the mean pooling, over plain slices.
//!
//! Why not a tensor library (candle, until this crate): a search query is one short text
//! (5–15 tokens). Through a general matrix multiply each of the 36 weight matrices is packed
//! (copied) before it is used a handful of times, and the work is split across threads that
//! mostly wait — 9–10 ms per query on the hub's 2-core machine, the largest part of a hybrid
//! search. Here each weight row is read once per text straight from where it lies and
//! multiplied against all the text's tokens in registers (`tile`); the whole pass runs on the
//! calling thread. The vector instructions are chosen at run time ([`pulp`]: AVX2 + FMA where
//! the CPU has them, scalar otherwise), with no `unsafe` here.
//!
//! The dense layers' weights are held in bfloat16 (`pack_bf16`): reading the weights is what
//! a short text's pass waits on, and half the bytes is ~15 % off a query (and half the memory:
//! 21 MB instead of 42 MB for all-MiniLM-L6-v2's encoder). The sums stay in `f32`; against
//! sentence-transformers' vectors the lowest cosine on the reference set is 0.99999.
//!
//! The arithmetic is otherwise BERT's as in the reference (Hugging Face `BertModel`): absolute
//! position embeddings, post-layer-norm blocks, exact (erf) GELU, softmax attention with 1/√d
//! scaling; then sentence-transformers' mean pooling and normalisation.

use std::collections::HashMap;

use pulp::{Arch, Simd, WithSimd};
use safetensors::{Dtype, SafeTensors};

/// A dense layer: `y = x Wᵀ + b`, `W` as the checkpoint has it (`[out][in]`) but in bfloat16
/// ([`pack_bf16`]): half the bytes to read per text — the pass is bound by reading weights.
struct Dense {
    packed: Vec<u32>,
    b: Vec<f32>,
    n_in: usize,
}

impl Dense {
    fn new(w: &[f32], b: Vec<f32>, n_in: usize) -> Result<Self, String> {
        if !n_in.is_multiple_of(2) || w.len() != b.len() * n_in {
            return Err(format!(
                "a {}x{n_in} layer: the width must be even",
                b.len()
            ));
        }
        Ok(Self {
            packed: pack_bf16(w, n_in),
            b,
            n_in,
        })
    }
}

struct Norm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value projections stacked: `[3·H][H]`.
    qkv: Dense,
    attn_out: Dense,
    attn_norm: Norm,
    up: Dense,
    down: Dense,
    out_norm: Norm,
}

/// The model's weights, ready for [`Bert::forward`].
pub struct Bert {
    hidden: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    eps: f32,
    max_positions: usize,
}

/// The configuration values the pass needs (Hugging Face `config.json`).
#[derive(Debug, Clone, Copy)]
pub struct BertShape {
    /// `hidden_size`: the width of every token's vector.
    pub hidden: usize,
    /// `num_hidden_layers`.
    pub layers: usize,
    /// `num_attention_heads`; divides `hidden`.
    pub heads: usize,
    /// `intermediate_size`: the feed-forward layer's width.
    pub intermediate: usize,
    /// `layer_norm_eps`.
    pub eps: f32,
    /// `max_position_embeddings`: the longest text in tokens.
    pub max_positions: usize,
    /// `vocab_size`.
    pub vocab: usize,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("hidden", &self.hidden)
            .field("layers", &self.layers.len())
            .field("heads", &self.heads)
            .finish_non_exhaustive()
    }
}

impl Bert {
    /// Reads the weights from a safetensors file's bytes. The error says which tensor is
    /// missing or has the wrong shape or type.
    pub fn from_safetensors(bytes: &[u8], shape: BertShape) -> Result<Self, String> {
        let hidden = shape.hidden;
        let st = SafeTensors::deserialize(bytes).map_err(|e| e.to_string())?;
        let names: HashMap<String, String> = st
            .names()
            .into_iter()
            .map(|n| {
                (
                    n.strip_prefix("bert.").unwrap_or(n).to_owned(),
                    n.to_owned(),
                )
            })
            .collect();
        let get = |name: &str, dims: &[usize]| -> Result<Vec<f32>, String> {
            let full = names
                .get(name)
                .ok_or_else(|| format!("the tensor {name} is missing"))?;
            let t = st.tensor(full).map_err(|e| format!("{name}: {e}"))?;
            if t.dtype() != Dtype::F32 {
                return Err(format!("{name} is {:?}, expected F32", t.dtype()));
            }
            if t.shape() != dims {
                return Err(format!(
                    "{name} has the shape {:?}, expected {dims:?}",
                    t.shape()
                ));
            }
            Ok(t.data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        };
        let dense = |prefix: &str, n_out: usize, n_in: usize| -> Result<Dense, String> {
            let w = get(&format!("{prefix}.weight"), &[n_out, n_in])?;
            let b = get(&format!("{prefix}.bias"), &[n_out])?;
            Dense::new(&w, b, n_in).map_err(|e| format!("{prefix}: {e}"))
        };
        let weights =
            |prefix: &str, n_out: usize, n_in: usize| -> Result<(Vec<f32>, Vec<f32>), String> {
                Ok((
                    get(&format!("{prefix}.weight"), &[n_out, n_in])?,
                    get(&format!("{prefix}.bias"), &[n_out])?,
                ))
            };
        let norm = |prefix: &str| -> Result<Norm, String> {
            Ok(Norm {
                gain: get(&format!("{prefix}.weight"), &[hidden])?,
                bias: get(&format!("{prefix}.bias"), &[hidden])?,
            })
        };
        if shape.heads == 0 || !hidden.is_multiple_of(shape.heads) {
            return Err(format!(
                "{} attention heads do not divide the hidden size {hidden}",
                shape.heads
            ));
        }
        let mut layers = Vec::with_capacity(shape.layers);
        for l in 0..shape.layers {
            let p = format!("encoder.layer.{l}");
            let (q, k, v) = (
                weights(&format!("{p}.attention.self.query"), hidden, hidden)?,
                weights(&format!("{p}.attention.self.key"), hidden, hidden)?,
                weights(&format!("{p}.attention.self.value"), hidden, hidden)?,
            );
            let qkv = Dense::new(&[q.0, k.0, v.0].concat(), [q.1, k.1, v.1].concat(), hidden)?;
            layers.push(Layer {
                qkv,
                attn_out: dense(&format!("{p}.attention.output.dense"), hidden, hidden)?,
                attn_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                up: dense(
                    &format!("{p}.intermediate.dense"),
                    shape.intermediate,
                    hidden,
                )?,
                down: dense(&format!("{p}.output.dense"), hidden, shape.intermediate)?,
                out_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        Ok(Self {
            hidden,
            word: get("embeddings.word_embeddings.weight", &[shape.vocab, hidden])?,
            position: get(
                "embeddings.position_embeddings.weight",
                &[shape.max_positions, hidden],
            )?,
            token_type: get("embeddings.token_type_embeddings.weight", &[2, hidden])?,
            embed_norm: norm("embeddings.LayerNorm")?,
            layers,
            heads: shape.heads,
            eps: shape.eps,
            max_positions: shape.max_positions,
        })
    }

    /// The sentence embedding of one tokenised text (`[CLS] … [SEP]`): the last hidden state
    /// averaged over the tokens, scaled to unit length.
    pub fn forward(&self, ids: &[u32]) -> Result<Vec<f32>, String> {
        let h = self.hidden;
        let n = ids.len();
        if n == 0 || n > self.max_positions {
            return Err(format!(
                "{n} tokens; the model takes 1 to {}",
                self.max_positions
            ));
        }
        let vocab = self.word.len() / h;
        let mut x = vec![0f32; n * h];
        for (t, &id) in ids.iter().enumerate() {
            let id = id as usize;
            if id >= vocab {
                return Err(format!("token id {id} outside the vocabulary of {vocab}"));
            }
            let row = &mut x[t * h..(t + 1) * h];
            let word = &self.word[id * h..(id + 1) * h];
            let pos = &self.position[t * h..(t + 1) * h];
            for (((r, w), p), ty) in row.iter_mut().zip(word).zip(pos).zip(&self.token_type) {
                *r = w + p + ty;
            }
        }
        layer_norm(&mut x, h, &self.embed_norm, self.eps);

        let arch = Arch::new();
        let mut qkv = vec![0f32; n * 3 * h];
        let mut ctx = vec![0f32; n * h];
        let mut proj = vec![0f32; n * h];
        let mut up = Vec::new();
        for layer in &self.layers {
            linear(arch, &x, &layer.qkv, &mut qkv);
            attention(&qkv, n, h, self.heads, &mut ctx);
            linear(arch, &ctx, &layer.attn_out, &mut proj);
            x.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
            layer_norm(&mut x, h, &layer.attn_norm, self.eps);

            up.resize(n * layer.up.b.len(), 0.0);
            linear(arch, &x, &layer.up, &mut up);
            up.iter_mut().for_each(|v| *v = gelu(*v));
            linear(arch, &up, &layer.down, &mut proj);
            x.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
            layer_norm(&mut x, h, &layer.out_norm, self.eps);
        }

        let mut mean = vec![0f32; h];
        for row in x.chunks_exact(h) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
        }
        #[allow(clippy::cast_precision_loss)] // n ≤ 512
        let inv = 1.0 / n as f32;
        mean.iter_mut().for_each(|m| *m *= inv);
        let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        mean.iter_mut().for_each(|x| *x /= norm);
        Ok(mean)
    }
}

/// `y[t] = W x[t] + b` for every token `t` ([`Linear`] on the best vector unit).
fn linear(arch: Arch, x: &[f32], d: &Dense, y: &mut [f32]) {
    arch.dispatch(Linear { x, d, y });
}

/// Rounds to bfloat16 (the upper half of an `f32`), to nearest, ties to even.
fn bf16_bits(v: f32) -> u32 {
    let bits = v.to_bits();
    if v.is_nan() {
        return (bits >> 16) | 0x40;
    }
    (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
}

/// Packs a `[out][in]` matrix as bfloat16 pairs: word `j` of a row holds weight `j` in its
/// upper half and weight `in/2 + j` in its lower half, so one mask or one shift makes each
/// half an `f32` again, on any vector width.
fn pack_bf16(w: &[f32], n_in: usize) -> Vec<u32> {
    let half = n_in / 2;
    w.chunks_exact(n_in)
        .flat_map(|row| {
            (0..half).map(move |j| (bf16_bits(row[j]) << 16) | bf16_bits(row[half + j]))
        })
        .collect()
}

struct Linear<'a> {
    x: &'a [f32],
    d: &'a Dense,
    y: &'a mut [f32],
}

impl WithSimd for Linear<'_> {
    type Output = ();

    /// Four weight rows against two tokens at a time ([`tile`]), the odd ones after.
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Linear { x, d, y } = self;
        let n_in = d.n_in;
        let half = n_in / 2;
        let n_out = d.b.len();
        let tokens = x.len() / n_in;
        debug_assert_eq!(y.len(), tokens * n_out);
        let row = |o: usize| &d.packed[o * half..(o + 1) * half];
        let tok = |t: usize| &x[t * n_in..(t + 1) * n_in];
        let mut o = 0;
        while o < n_out {
            if o + 4 <= n_out {
                let rows = [row(o), row(o + 1), row(o + 2), row(o + 3)];
                let mut t = 0;
                while t + 2 <= tokens {
                    let sums = tile::<S, 4, 2>(simd, rows, [tok(t), tok(t + 1)]);
                    for (r, s) in sums.iter().enumerate() {
                        y[t * n_out + o + r] = s[0] + d.b[o + r];
                        y[(t + 1) * n_out + o + r] = s[1] + d.b[o + r];
                    }
                    t += 2;
                }
                if t < tokens {
                    let sums = tile::<S, 4, 1>(simd, rows, [tok(t)]);
                    for (r, s) in sums.iter().enumerate() {
                        y[t * n_out + o + r] = s[0] + d.b[o + r];
                    }
                }
                o += 4;
            } else {
                for t in 0..tokens {
                    y[t * n_out + o] = tile::<S, 1, 1>(simd, [row(o)], [tok(t)])[0][0] + d.b[o];
                }
                o += 1;
            }
        }
    }
}

/// The dot products of `R` packed rows with `T` tokens, the sums held in registers: each
/// weight word is loaded once for all `T` tokens, each token chunk once for all `R` rows.
#[inline(always)]
fn tile<S: Simd, const R: usize, const T: usize>(
    simd: S,
    rows: [&[u32]; R],
    xs: [&[f32]; T],
) -> [[f32; T]; R] {
    let half = rows[0].len();
    let mask = simd.splat_u32s(0xFFFF_0000);
    let sixteen = simd.splat_u32s(16);
    let packed: [&[S::u32s]; R] = rows.map(|r| S::as_simd_u32s(r).0);
    let first: [&[S::f32s]; T] = xs.map(|x| S::as_simd_f32s(&x[..half]).0);
    let second: [&[S::f32s]; T] = xs.map(|x| S::as_simd_f32s(&x[half..]).0);
    let chunks = packed[0].len();
    let zero = simd.splat_f32s(0.0);
    let mut acc = [[zero; T]; R];
    for i in 0..chunks {
        let a: [S::f32s; T] = std::array::from_fn(|t| first[t][i]);
        let b: [S::f32s; T] = std::array::from_fn(|t| second[t][i]);
        for r in 0..R {
            let p = packed[r][i];
            let upper: S::f32s = pulp::cast(simd.and_u32s(p, mask));
            let lower: S::f32s = pulp::cast(simd.wrapping_dyn_shl_u32s(p, sixteen));
            for t in 0..T {
                acc[r][t] = simd.mul_add_e_f32s(upper, a[t], acc[r][t]);
                acc[r][t] = simd.mul_add_e_f32s(lower, b[t], acc[r][t]);
            }
        }
    }
    // The words past the last full vector.
    let done = half - S::as_simd_u32s(rows[0]).1.len();
    std::array::from_fn(|r| {
        std::array::from_fn(|t| {
            let tail: f32 = (done..half)
                .map(|j| {
                    let p = rows[r][j];
                    f32::from_bits(p & 0xFFFF_0000) * xs[t][j]
                        + f32::from_bits(p << 16) * xs[t][half + j]
                })
                .sum();
            simd.reduce_sum_f32s(acc[r][t]) + tail
        })
    })
}

/// Self-attention over the stacked projections `qkv` (`[t][q | k | v]`), all heads, no mask
/// (one text, no padding), into `ctx` (`[t][H]`).
fn attention(qkv: &[f32], n: usize, hidden: usize, heads: usize, ctx: &mut [f32]) {
    let dim = hidden / heads;
    #[allow(clippy::cast_precision_loss)] // a head's width is small
    let scale = 1.0 / (dim as f32).sqrt();
    let row = 3 * hidden;
    let mut p = vec![0f32; n];
    for h in 0..heads {
        let off = h * dim;
        for i in 0..n {
            let q = &qkv[i * row + off..i * row + off + dim];
            for (j, pj) in p.iter_mut().enumerate() {
                let k = &qkv[j * row + hidden + off..j * row + hidden + off + dim];
                *pj = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
            }
            let max = p.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0;
            for pj in &mut p {
                *pj = (*pj - max).exp();
                sum += *pj;
            }
            let out = &mut ctx[i * hidden + off..i * hidden + off + dim];
            out.fill(0.0);
            for (j, pj) in p.iter().enumerate() {
                let w = pj / sum;
                let v = &qkv[j * row + 2 * hidden + off..j * row + 2 * hidden + off + dim];
                out.iter_mut().zip(v).for_each(|(o, v)| *o += w * v);
            }
        }
    }
}

/// Layer normalisation of each `H`-wide row of `x`, in place.
fn layer_norm(x: &mut [f32], hidden: usize, norm: &Norm, eps: f32) {
    #[allow(clippy::cast_precision_loss)]
    let h = hidden as f32;
    for row in x.chunks_exact_mut(hidden) {
        let mean = row.iter().sum::<f32>() / h;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// The exact GELU BERT uses: `x · Φ(x)`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for test numbers in [-1, 1).
    fn numbers(seed: u64, n: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                #[allow(clippy::cast_precision_loss)]
                let u = (x >> 40) as f32 / (1u64 << 24) as f32;
                2.0 * u - 1.0
            })
            .collect()
    }

    /// The register-blocked product equals the plain one for every shape, the odd ones
    /// included: outputs not a multiple of four, an odd token count, widths that leave a tail
    /// after the vector lanes.
    #[test]
    fn linear_equals_the_plain_product_for_every_shape() {
        for (tokens, n_in, n_out) in [
            (1, 8, 4),
            (2, 16, 8),
            (3, 14, 7),
            (5, 384, 1152),
            (7, 1536, 384),
            (4, 2, 1),
            (9, 30, 6),
            (2, 18, 5),
        ] {
            let x = numbers(1, tokens * n_in);
            let w = numbers(2, n_out * n_in);
            let d = Dense::new(&w, numbers(3, n_out), n_in).unwrap();
            // The weights as the layer holds them (bfloat16).
            let w: Vec<f32> = w
                .iter()
                .map(|v| f32::from_bits(bf16_bits(*v) << 16))
                .collect();
            let mut y = vec![0f32; tokens * n_out];
            linear(Arch::new(), &x, &d, &mut y);
            for t in 0..tokens {
                for o in 0..n_out {
                    let want: f32 = (0..n_in)
                        .map(|i| w[o * n_in + i] * x[t * n_in + i])
                        .sum::<f32>()
                        + d.b[o];
                    let got = y[t * n_out + o];
                    assert!(
                        (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                        "{tokens}x{n_in}->{n_out} at ({t},{o}): {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn bfloat16_rounds_to_nearest_even_and_odd_widths_are_refused() {
        let back = |v: f32| f32::from_bits(bf16_bits(v) << 16);
        assert_eq!(back(1.0), 1.0);
        assert_eq!(back(-2.5), -2.5);
        // 1 + 2^-8 is half-way between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(back(1.0 + 1.0 / 256.0), 1.0);
        // Just above half-way: up.
        assert_eq!(back(1.0 + 1.0 / 256.0 + 1.0 / 65536.0), 1.0 + 1.0 / 128.0);
        assert!(back(f32::NAN).is_nan());
        for v in numbers(9, 1000) {
            assert!((back(v) - v).abs() <= v.abs() / 256.0, "{v}");
        }
        assert!(Dense::new(&[0.0; 6], vec![0.0; 2], 3).is_err());
    }

    #[test]
    fn gelu_is_the_exact_one() {
        // x·Φ(x) at a few points (Φ from tables to 7 places).
        for (x, want) in [
            (0.0, 0.0),
            (1.0, 0.841_344_7),
            (-1.0, -0.158_655_3),
            (2.0, 1.954_5),
        ] {
            assert!((gelu(x) - want).abs() < 1e-4, "gelu({x}) = {}", gelu(x));
        }
    }

    #[test]
    fn layer_norm_centres_and_scales_each_row() {
        let mut x = vec![1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 10.0];
        let norm = Norm {
            gain: vec![1.0; 4],
            bias: vec![0.5; 4],
        };
        layer_norm(&mut x, 4, &norm, 1e-12);
        let row: f32 = x[..4].iter().sum::<f32>() / 4.0;
        assert!((row - 0.5).abs() < 1e-6);
        let var: f32 = x[..4].iter().map(|v| (v - 0.5) * (v - 0.5)).sum::<f32>() / 4.0;
        assert!((var - 1.0).abs() < 1e-4, "{var}");
        // A constant row becomes the bias.
        assert!(x[4..].iter().all(|v| (v - 0.5).abs() < 1e-6), "{x:?}");
    }

    /// One head, two tokens whose keys are equal: attention averages the values.
    #[test]
    fn attention_weighs_values_by_softmax_of_scaled_scores() {
        let hidden = 2;
        // [q | k | v] per token.
        let qkv = vec![
            1.0, 0.0, 1.0, 1.0, 2.0, 4.0, //
            0.0, 1.0, 1.0, 1.0, 6.0, 8.0,
        ];
        let mut ctx = vec![0f32; 2 * hidden];
        attention(&qkv, 2, hidden, 1, &mut ctx);
        assert_eq!(ctx, vec![4.0, 6.0, 4.0, 6.0]);
        // Unequal keys: token 0's query favours token 1's key by softmax(0, 1/√2).
        let qkv = vec![
            1.0, 0.0, 0.0, 0.0, 0.0, 0.0, //
            0.0, 0.0, 1.0, 0.0, 1.0, 0.0,
        ];
        attention(&qkv, 2, hidden, 1, &mut ctx);
        let s = std::f32::consts::FRAC_1_SQRT_2;
        let want = s.exp() / (1.0 + s.exp());
        assert!((ctx[0] - want).abs() < 1e-6, "{ctx:?}");
    }

    #[test]
    fn a_file_that_is_not_safetensors_or_lacks_a_tensor_is_refused() {
        let shape = BertShape {
            hidden: 4,
            layers: 1,
            heads: 2,
            intermediate: 8,
            eps: 1e-12,
            max_positions: 8,
            vocab: 10,
        };
        let Err(e) = Bert::from_safetensors(b"not a safetensors file", shape) else {
            panic!("accepted garbage");
        };
        assert!(!e.is_empty());
        let empty = safetensors::serialize(
            std::iter::empty::<(&str, safetensors::tensor::TensorView<'_>)>(),
            None,
        )
        .unwrap();
        let Err(e) = Bert::from_safetensors(&empty, shape) else {
            panic!("accepted a file without tensors");
        };
        assert!(e.contains("is missing"), "{e}");
    }
}
