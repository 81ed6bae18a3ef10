"""flax's example architectures, written here as flax's NNX examples write them, at sizes a 2-core CPU
trains in reasonable time; shared by ``bench_overhead.py --models unet,minigpt,vit,mnist`` and
``tests/core/test_real_models.py``.

  UNet       docs_nnx/examples/digits_diffusion_model: ResBlocks (conv, LayerNorm, gelu, 1x1
             shortcut), a time MLP and per-scale projections, self-attention at two scales and the
             bridge, skip connections; flow-matching loss, AdamW with warmup + cosine and clipping
  MiniGPT    docs_nnx/examples/minigpt: token + position embeddings, causal self-attention blocks
             with dropout, kernels annotated ``out_sharding=P(None, 'model')``; built under a mesh
  ViT        docs_nnx/examples/vit_training: a conv patch embedding, class token, learned position
             embeddings, pre-norm encoder blocks, a classifier on the class token (no sharding config)
  MnistCNN   docs_nnx/mnist_tutorial: two convs with BatchNorm and Dropout, avg-pooling, two Linears

On flax 0.11 (Colab) the few newer arguments are replaced by their older spelling (kernel_init with
``nnx.with_partitioning`` for ``kernel_metadata``, a causal mask for ``is_causal``). Each ``make_*``
returns a :class:`Setup`: the model, its optimizer, a jitted step returning (loss, grads) (what
``viewer.log(loss=, grads=)`` takes) and a few batches, and a jitted forward for capture.
"""

from __future__ import annotations

import dataclasses
import inspect
from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import PartitionSpec as P

_NEW_META = "kernel_metadata" in inspect.signature(nnx.Linear.__init__).parameters  # flax >= 0.12
_IS_CAUSAL = "is_causal" in inspect.signature(nnx.MultiHeadAttention.__call__).parameters
_EMBED_SHARDING = "out_sharding" in inspect.signature(nnx.Embed.__call__).parameters
_List = getattr(nnx, "List", list)  # flax 0.11 holds modules in plain lists


@dataclasses.dataclass
class Setup:
    name: str
    model: nnx.Module
    optimizer: nnx.Optimizer
    step: Callable  # step(*batch) -> (loss, grads), one jitted training step
    batches: list
    forward: Callable  # forward(model, *inputs): one jitted forward
    inputs: tuple  # forward's inputs after the model
    mesh: Any = None  # the mesh the model was built under (enter it again to run its steps)


# -- the diffusion U-Net ------------------------------------------------------------------------


def _conv(cin, cout, k, rngs):
    pad = ((1, 1), (1, 1)) if k == 3 else "SAME"
    return nnx.Conv(in_features=cin, out_features=cout, kernel_size=(k, k), strides=(1, 1), padding=pad, rngs=rngs)


class ResBlock(nnx.Module):
    def __init__(self, cin: int, cout: int, rngs: nnx.Rngs):
        self.conv1, self.norm1 = _conv(cin, cout, 3, rngs), nnx.LayerNorm(cout, rngs=rngs)
        self.conv2, self.norm2 = _conv(cout, cout, 3, rngs), nnx.LayerNorm(cout, rngs=rngs)
        self.shortcut = _conv(cin, cout, 1, rngs)  # a projection where the channel count changes

    def __call__(self, x):
        identity = self.shortcut(x)
        x = nnx.gelu(self.norm1(self.conv1(x)))
        x = nnx.gelu(self.norm2(self.conv2(x)))
        return x + identity


class UNet(nnx.Module):
    def __init__(self, in_channels: int, out_channels: int, features: int, time_emb_dim: int = 128, *, rngs: nnx.Rngs):
        f, t = features, time_emb_dim
        self.time_emb_dim = t
        self.time_mlp = nnx.Sequential(nnx.Linear(t, t, rngs=rngs), nnx.gelu, nnx.Linear(t, t, rngs=rngs))
        self.time_proj = _List([nnx.Linear(t, f * m, rngs=rngs) for m in (1, 2, 4, 8)])
        self.down_convs = _List(
            [ResBlock(a, b, rngs) for a, b in ((in_channels, f), (f, 2 * f), (2 * f, 4 * f), (4 * f, 8 * f))]
        )
        self.attention1 = nnx.MultiHeadAttention(num_heads=1, in_features=4 * f, decode=False, rngs=rngs)
        self.attention2 = nnx.MultiHeadAttention(num_heads=1, in_features=8 * f, decode=False, rngs=rngs)
        self.bridge_down = ResBlock(8 * f, 16 * f, rngs)
        self.bridge_attention = nnx.MultiHeadAttention(num_heads=1, in_features=16 * f, decode=False, rngs=rngs)
        self.bridge_up = ResBlock(16 * f, 16 * f, rngs)
        self.up_convs = _List(
            [ResBlock(a, b, rngs) for a, b in ((24 * f, 8 * f), (12 * f, 4 * f), (6 * f, 2 * f), (3 * f, f))]
        )
        self.final_norm = nnx.LayerNorm(f, rngs=rngs)
        self.final_conv = _conv(f, out_channels, 3, rngs)

    def _attend(self, attn, x):
        b, h, w, c = x.shape
        return x + attn(x.reshape(b, h * w, c)).reshape(b, h, w, c)

    def _pos_encoding(self, t, dim):  # sinusoidal embedding of the diffusion time
        half = dim // 2
        freqs = jnp.exp(jnp.arange(half) * -(jnp.log(10000.0) / (half - 1)))
        emb = (1000 * t[:, None]) * freqs[None, :]
        return jnp.concatenate([jnp.sin(emb), jnp.cos(emb)], axis=1)

    @staticmethod
    def _downsample(x):
        return nnx.max_pool(x, window_shape=(2, 2), strides=(2, 2), padding="SAME")

    @staticmethod
    def _upsample(x, size):
        return jax.image.resize(x, (x.shape[0], size, size, x.shape[3]), method="nearest")

    def __call__(self, x, t):
        t_emb = self.time_mlp(self._pos_encoding(t, self.time_emb_dim))
        t_embs = [proj(t_emb)[:, None, None, :] for proj in self.time_proj]
        skips = []
        for conv, t_e, attn in zip(self.down_convs, t_embs, (None, None, self.attention1, self.attention2)):
            d = conv(self._downsample(skips[-1]) if skips else x)
            if attn is not None:
                d = self._attend(attn, d)
            skips.append(d + jnp.broadcast_to(t_e, d.shape))
        u = self.bridge_up(self._attend(self.bridge_attention, self.bridge_down(self._downsample(skips[-1]))))
        for conv, skip in zip(self.up_convs, reversed(skips)):
            u = conv(jnp.concatenate([self._upsample(u, skip.shape[1]), skip], axis=-1))
        return self.final_conv(nnx.gelu(self.final_norm(u)))


def _flow_matching_loss(model, x1, rngs):
    t = jax.nn.sigmoid(rngs.normal((x1.shape[0],)))  # logit-normal time sampling
    x0 = rngs.normal(x1.shape)
    tf = t[:, None, None, None]
    return jnp.mean((model((1 - tf) * x0 + tf * x1, t) - (x1 - x0)) ** 2)


@nnx.jit
def unet_step(model, optimizer, x1, rngs):
    loss, grads = nnx.value_and_grad(_flow_matching_loss)(model, x1, rngs)
    optimizer.update(model, grads)
    return loss, grads


@nnx.jit
def unet_forward(model, x, t):
    return model(x, t)


def make_unet(features: int = 16, batch: int = 32, image: int = 8, seed: int = 0) -> Setup:
    """The example's U-Net on 8x8 one-channel images (sklearn's digits; random here), its AdamW."""
    model = UNet(1, 1, features, rngs=nnx.Rngs(seed))
    schedule = optax.join_schedules(
        [optax.linear_schedule(0.0, 5e-4, 1000), optax.cosine_decay_schedule(5e-4, 1000, alpha=0.01)], boundaries=[1000]
    )
    tx = optax.chain(
        optax.clip_by_global_norm(0.5), optax.adamw(schedule, b1=0.9, b2=0.999, eps=1e-8, weight_decay=2e-5)
    )
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    rng = np.random.default_rng(seed)
    rngs = nnx.Rngs(seed + 1)
    batches = [(jnp.asarray(rng.uniform(-1, 1, (batch, image, image, 1)), jnp.float32), rngs) for _ in range(4)]
    step = partial(unet_step, model, optimizer)
    inputs = (batches[0][0], jnp.full((batch,), 0.5, jnp.float32))
    return Setup("UNet", model, optimizer, step, batches, unet_forward, inputs)


# -- miniGPT -------------------------------------------------------------------------------------


def _sharded(spec: P, bias: bool = True) -> dict:
    """The example's ``kernel_metadata={'out_sharding': ...}`` (flax >= 0.12), or flax 0.11's spelling."""
    if _NEW_META:
        out = {"kernel_metadata": {"out_sharding": spec}}
        if bias:
            out["bias_metadata"] = {"out_sharding": P(spec[-1])}
        return out
    return {"kernel_init": nnx.with_partitioning(nnx.initializers.lecun_normal(), tuple(spec))}


class TransformerBlock(nnx.Module):
    def __init__(self, embed_dim: int, num_heads: int, ff_dim: int, *, rngs: nnx.Rngs, rate: float = 0.1):
        mha_spec = P(None, None, "model") if not _NEW_META else P(None, "model")
        self.mha = nnx.MultiHeadAttention(
            num_heads=num_heads, in_features=embed_dim, decode=False, rngs=rngs, **_sharded(mha_spec)
        )
        self.dropout1 = nnx.Dropout(rate=rate, rngs=rngs)
        self.layer_norm1 = nnx.LayerNorm(epsilon=1e-6, num_features=embed_dim, rngs=rngs)
        self.mlp = nnx.Sequential(
            nnx.Linear(embed_dim, ff_dim, rngs=rngs, **_sharded(P(None, "model"))),
            nnx.relu,
            nnx.Linear(ff_dim, embed_dim, rngs=rngs, **_sharded(P(None, "model"))),
            nnx.Dropout(rate=rate, rngs=rngs),
        )
        self.layer_norm2 = nnx.LayerNorm(epsilon=1e-6, num_features=embed_dim, rngs=rngs)

    def __call__(self, inputs):
        if _IS_CAUSAL:
            attention = self.mha(inputs_q=inputs, is_causal=True, decode=False)
        else:
            attention = self.mha(inputs_q=inputs, mask=nnx.make_causal_mask(inputs[..., 0]), decode=False)
        out1 = self.layer_norm1(inputs + self.dropout1(attention))
        return self.layer_norm2(out1 + self.mlp(out1))


class TokenAndPositionEmbedding(nnx.Module):
    def __init__(self, maxlen: int, vocab_size: int, embed_dim: int, *, rngs: nnx.Rngs):
        self.token_emb = nnx.Embed(num_embeddings=vocab_size, features=embed_dim, rngs=rngs)
        self.pos_emb = nnx.Embed(num_embeddings=maxlen, features=embed_dim, rngs=rngs)

    def __call__(self, x):
        positions = jnp.arange(0, x.shape[1])[None, :]
        if _EMBED_SHARDING:  # the example's gather under an Explicit mesh: sharded like the tokens
            return self.token_emb(x, out_sharding=jax.typeof(x).sharding) + self.pos_emb(positions)
        return self.token_emb(x) + self.pos_emb(positions)


class MiniGPT(nnx.Module):
    def __init__(
        self,
        maxlen: int,
        vocab_size: int,
        embed_dim: int,
        num_heads: int,
        feed_forward_dim: int,
        num_transformer_blocks: int,
        rngs: nnx.Rngs,
    ):
        self.embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim, rngs=rngs)
        self.transformer_blocks = nnx.Sequential(
            *[
                TransformerBlock(embed_dim, num_heads, feed_forward_dim, rngs=rngs)
                for _ in range(num_transformer_blocks)
            ]
        )
        self.output_layer = nnx.Linear(embed_dim, vocab_size, rngs=rngs, **_sharded(P(None, "model")))

    def __call__(self, inputs):
        logits = self.output_layer(self.transformer_blocks(self.embedding_layer(inputs)))
        if _EMBED_SHARDING:
            return jax.sharding.reshard(logits, jax.typeof(inputs).sharding)
        return logits


def _lm_loss(model, batch):
    logits = model(batch[0])
    return optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=batch[1]).mean()


@nnx.jit
def minigpt_step(model, optimizer, inputs, targets):
    loss, grads = nnx.value_and_grad(_lm_loss)(model, (inputs, targets))
    optimizer.update(model, grads)
    return loss, grads


@nnx.jit
def minigpt_forward(model, inputs):
    return model(inputs)


def make_minigpt(
    maxlen: int = 32,
    vocab_size: int = 1000,
    embed_dim: int = 64,
    num_heads: int = 4,
    feed_forward_dim: int = 64,
    blocks: int = 4,
    batch: int = 16,
    mesh_shape=(1, 2),
    seed: int = 0,
) -> Setup:
    """The example's model and step under ``jax.make_mesh(mesh_shape, ('batch', 'model'))`` (default
    (1, 2): its kernels sharded over two devices); the data sharded over 'batch', as the example puts it."""
    mesh = jax.make_mesh(mesh_shape, ("batch", "model"))
    with _use_mesh(mesh):
        model = MiniGPT(maxlen, vocab_size, embed_dim, num_heads, feed_forward_dim, blocks, rngs=nnx.Rngs(seed))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        rng = np.random.default_rng(seed)
        batches = []
        for _ in range(4):
            tokens = jnp.asarray(rng.integers(0, vocab_size, (batch, maxlen)), jnp.int32)
            targets = jnp.concatenate([tokens[:, 1:], jnp.zeros((batch, 1), jnp.int32)], axis=1)
            batches.append(jax.device_put((tokens, targets), jax.sharding.NamedSharding(mesh, P("batch", None))))
    step = partial(minigpt_step, model, optimizer)
    return Setup("miniGPT", model, optimizer, step, batches, minigpt_forward, (batches[0][0],), mesh)


def _use_mesh(mesh):
    return jax.set_mesh(mesh) if hasattr(jax, "set_mesh") else jax.sharding.use_mesh(mesh)


# -- the ViT --------------------------------------------------------------------------------------


class TransformerEncoder(nnx.Module):
    def __init__(self, hidden_size: int, num_heads: int, mlp_dim: int, dropout_rate: float, *, rngs: nnx.Rngs):
        self.norm1 = nnx.LayerNorm(hidden_size, rngs=rngs)
        self.mha = nnx.MultiHeadAttention(
            num_heads=num_heads,
            in_features=hidden_size,
            dropout_rate=dropout_rate,
            broadcast_dropout=False,
            decode=False,
            deterministic=False,
            rngs=rngs,
        )
        self.norm2 = nnx.LayerNorm(hidden_size, rngs=rngs)
        self.mlp_up_proj = nnx.Linear(hidden_size, mlp_dim, rngs=rngs)
        self.mlp_down_proj = nnx.Linear(mlp_dim, hidden_size, rngs=rngs)
        self.mlp_drop = nnx.Dropout(dropout_rate, rngs=rngs)

    def __call__(self, x):
        x = x + self.mha(self.norm1(x))
        h = self.mlp_drop(nnx.gelu(self.mlp_up_proj(self.norm2(x))))
        return x + self.mlp_drop(self.mlp_down_proj(h))


class VisionTransformer(nnx.Module):
    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 3,
        img_size: int = 32,
        patch_size: int = 8,
        num_layers: int = 4,
        num_heads: int = 4,
        mlp_dim: int = 128,
        hidden_size: int = 64,
        dropout_rate: float = 0.1,
        *,
        rngs: nnx.Rngs,
    ):
        n_patches = (img_size // patch_size) ** 2
        self.patch_embeddings = nnx.Conv(
            in_channels,
            hidden_size,
            kernel_size=(patch_size, patch_size),
            strides=(patch_size, patch_size),
            padding="VALID",
            use_bias=True,
            rngs=rngs,
        )
        init = jax.nn.initializers.truncated_normal(stddev=0.02)
        self.position_embeddings = nnx.Param(init(rngs.params(), (1, n_patches + 1, hidden_size), jnp.float32))
        self.dropout = nnx.Dropout(dropout_rate, rngs=rngs)
        self.cls_token = nnx.Param(jnp.zeros((1, 1, hidden_size), jnp.float32))
        self.encoder = nnx.Sequential(
            *[TransformerEncoder(hidden_size, num_heads, mlp_dim, dropout_rate, rngs=rngs) for _ in range(num_layers)]
        )
        self.final_norm = nnx.LayerNorm(hidden_size, rngs=rngs)
        self.classifier = nnx.Linear(hidden_size, num_classes, rngs=rngs)

    def __call__(self, x):
        patches = self.patch_embeddings(x)
        patches = patches.reshape(patches.shape[0], -1, patches.shape[-1])
        cls = jnp.tile(self.cls_token[...], (patches.shape[0], 1, 1))
        x = jnp.concatenate([cls, patches], axis=1) + self.position_embeddings[...]
        x = self.final_norm(self.encoder(self.dropout(x)))
        return self.classifier(x[:, 0])


def _classifier_loss(model, images, labels):
    logits = model(images)
    return optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=labels).mean()


@nnx.jit
def classifier_step(model, optimizer, images, labels):
    loss, grads = nnx.value_and_grad(_classifier_loss)(model, images, labels)
    optimizer.update(model, grads)
    return loss, grads


@nnx.jit
def classifier_forward(model, images):
    return model(images)


def make_vit(
    img_size: int = 32,
    patch_size: int = 8,
    num_layers: int = 4,
    hidden_size: int = 64,
    num_heads: int = 4,
    mlp_dim: int = 128,
    batch: int = 32,
    seed: int = 0,
) -> Setup:
    model = VisionTransformer(
        10, 3, img_size, patch_size, num_layers, num_heads, mlp_dim, hidden_size, rngs=nnx.Rngs(seed)
    )
    optimizer = nnx.Optimizer(model, optax.sgd(1e-3, momentum=0.8, nesterov=True), wrt=nnx.Param)
    return _classifier_setup("ViT", model, optimizer, (img_size, img_size, 3), batch, seed)


# -- the MNIST tutorial's CNN -----------------------------------------------------------------------


class MnistCNN(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.batch_norm1 = nnx.BatchNorm(32, rngs=rngs)
        self.dropout1 = nnx.Dropout(rate=0.025, rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.batch_norm2 = nnx.BatchNorm(64, rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.dropout2 = nnx.Dropout(rate=0.025, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.batch_norm1(self.dropout1(self.conv1(x)))))
        x = self.avg_pool(nnx.relu(self.batch_norm2(self.conv2(x))))
        x = nnx.relu(self.dropout2(self.linear1(x.reshape(x.shape[0], -1))))
        return self.linear2(x)


def make_mnist(batch: int = 64, seed: int = 0) -> Setup:
    model = MnistCNN(rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adamw(0.005, 0.9), wrt=nnx.Param)
    return _classifier_setup("MNIST CNN", model, optimizer, (28, 28, 1), batch, seed)


def _classifier_setup(name, model, optimizer, shape, batch, seed) -> Setup:
    rng = np.random.default_rng(seed)
    batches = [
        (jnp.asarray(rng.normal(size=(batch, *shape)), jnp.float32), jnp.asarray(rng.integers(0, 10, batch), jnp.int32))
        for _ in range(4)
    ]
    step = partial(classifier_step, model, optimizer)
    return Setup(name, model, optimizer, step, batches, classifier_forward, (batches[0][0],))


MAKERS = {"unet": make_unet, "minigpt": make_minigpt, "vit": make_vit, "mnist": make_mnist}
