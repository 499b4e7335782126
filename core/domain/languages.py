"""Language codes the project accepts: an ISO 639-1 code (en, zh, ko, …) or one of the few three-letter codes
speech tools use for languages without one (yue, cmn, fil, …), optionally with a script and a region
(zh-hans, pt-br, es-419). A typo such as 'zz' or 'en-nonsense' is refused instead of becoming a language of its
own that no voice, prompt or metric knows."""

from __future__ import annotations

import re

ISO_639_1 = frozenset(
    """
    aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en
    eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja
    jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb
    nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq
    sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
    """.split()
)
# Three-letter codes in common use by TTS/ASR services for languages or varieties without a two-letter code.
EXTRA_CODES = frozenset({"ast", "ceb", "cmn", "fil", "gsw", "haw", "hmn", "nso", "wuu", "yue"})
KNOWN_LANGUAGES = ISO_639_1 | EXTRA_CODES

# language[-script][-region]: script four letters (hans), region two letters (br) or three digits (419)
_SHAPE = re.compile(r"^(?P<language>[a-z]{2,3})(?:-(?P<script>[a-z]{4}))?(?:-(?P<region>[a-z]{2}|[0-9]{3}))?$")


def normalize_language(text: str) -> str:
    """The canonical (lower-case, hyphenated) form of a language code, or ValueError saying what is wrong."""
    code = text.strip().lower().replace("_", "-")
    shape = _SHAPE.match(code)
    if not shape:
        raise ValueError(
            f"'{text}' is not a language code: use a two-letter ISO 639-1 code such as en, zh or ko, "
            "optionally with a script and region (zh-hans, pt-br)"
        )
    if shape["language"] not in KNOWN_LANGUAGES:
        raise ValueError(f"'{text}': '{shape['language']}' is not a known language code (ISO 639-1, e.g. en, zh, ko)")
    return code
