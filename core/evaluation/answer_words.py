"""The words a reply in each of Global-MMLU's 42 languages uses to state its answer, and the option letters
some scripts write instead of A–D — data for the answer parser (`parsing.py`), one entry per language.

Sources, per entry (`source`):
- `simple-evals`: openai/simple-evals `common.py`, MULTILINGUAL_ANSWER_REGEXES and normalize_extracted_answer
  (MMMLU's answer cues and the Arabic أ ب ج د / Bengali অ ব ড ঢ letters);
- `lighteval`: huggingface/lighteval `tasks/templates/utils/translation_literals.py` (the `answer` word,
  the "therefore" word) — a maintained table of prompt words per language;
- `project`: this project's table for what neither source has (the copula "is", "correct", "final", the word
  for "option"), each word in its native script and checked by tests/core/evaluation/test_answer_words.py
  against a reply written in that language.

The parser does not know a reply's language: it reads every language's words at once, so a word here must not
be an ordinary word of another language in the place it is used (after an answer noun, before a letter).
Words are matched case-insensitively after NFKC."""

from __future__ import annotations

from dataclasses import dataclass

# Global-MMLU's languages (the dataset's 42 subsets, CohereForAI/Global-MMLU on Hugging Face)
GLOBAL_MMLU_LANGUAGES = (
    "am ar bn cs de el en es fa fil fr ha he hi id ig it ja ko ky lt mg ms ne nl ny pl pt ro ru si sn so sr sv sw "
    "te tr uk vi yo zh"
).split()


@dataclass(frozen=True)
class AnswerWords:
    answer: tuple[str, ...]  # the noun "answer" (with the article or case forms replies use)
    correct: tuple[str, ...] = ()  # "correct", "right", placed before or after the noun
    final: tuple[str, ...] = ()  # "final": a statement with it decides over others (rule 1)
    copula: tuple[str, ...] = ()  # "is" between the noun and the letter ("La respuesta es B")
    option: tuple[str, ...] = ()  # "option", "choice" before a letter ("la opción B", "الخيار ج")
    article: tuple[str, ...] = ()  # an article before the letter ("é a C", "es la B")
    correction: tuple[str, ...] = ()  # "wait", "actually": what follows corrects what came before
    source: str = "project"


# English, Chinese, Korean and Japanese have their own, richer rules in parsing.py.
ANSWER_WORDS: dict[str, AnswerWords] = {
    "am": AnswerWords(("መልስ", "መልሱ"), ("ትክክለኛው", "ትክክለኛ"), ("የመጨረሻው",), (), ("አማራጭ",)),
    "ar": AnswerWords(
        ("الإجابة", "إجابة", "الاجابة", "اجابة", "الجواب", "جواب"),  # with and without the hamza
        ("الصحيحة", "الصحيح", "صحيحة"),
        ("النهائية", "النهائي"),
        ("هي", "هو"),
        ("الخيار", "خيار", "الاختيار"),
        correction=("انتظر", "في الواقع", "تصحيح"),
        source="simple-evals, lighteval",
    ),
    "bn": AnswerWords(("উত্তর", "উত্তরঃ"), ("সঠিক",), ("চূড়ান্ত",), ("হল", "হলো"), ("বিকল্প",), source="simple-evals"),
    "cs": AnswerWords(
        ("odpověď",),
        ("správná", "správný", "správnou"),
        ("konečná", "finální"),
        ("je",),
        ("možnost",),
        correction=("počkat", "vlastně", "oprava"),
        source="lighteval",
    ),
    "de": AnswerWords(
        ("antwort",),
        ("richtige", "korrekte", "richtig", "korrekt"),
        ("endgültige", "finale"),
        ("ist", "lautet", "wäre"),
        ("option", "antwortmöglichkeit", "möglichkeit", "auswahl", "buchstabe"),
        ("die", "der"),
        ("warte", "moment", "eigentlich", "korrektur"),
        source="simple-evals, lighteval",
    ),
    "el": AnswerWords(
        ("απάντηση",),
        ("σωστή",),
        ("τελική",),
        ("είναι",),
        ("επιλογή",),
        ("η", "το"),
        ("περίμενε", "στην πραγματικότητα"),
        source="lighteval",
    ),
    "es": AnswerWords(
        ("respuesta",),
        ("correcta", "correcto"),
        ("final",),
        ("es", "sería", "seria"),
        ("opción", "opcion", "alternativa", "inciso", "literal"),
        ("la", "el"),
        ("espera", "en realidad", "corrijo", "corrección"),
        source="simple-evals, lighteval",
    ),
    "fa": AnswerWords(("پاسخ", "جواب"), ("صحیح", "درست"), ("نهایی",), (), ("گزینه",), correction=("صبر کنید",)),
    "fil": AnswerWords(
        ("sagot",), ("tamang", "wastong", "tama"), ("huling", "pinal na"), ("ay",), ("pagpipilian", "opsyon", "titik")
    ),
    "fr": AnswerWords(
        ("réponse", "reponse"),
        ("bonne", "correcte"),
        ("finale",),
        ("est", "serait"),
        ("option", "choix", "proposition", "lettre"),
        ("la", "le"),
        ("attendez", "attends", "en fait", "correction"),
        source="simple-evals, lighteval",
    ),
    "ha": AnswerWords(("amsa", "amsar"), ("daidai", "madaidaiciya"), ("karshe",), ("ita ce", "shi ne"), ("zaɓi",)),
    "he": AnswerWords(
        ("תשובה", "התשובה"), ("הנכונה", "נכונה"), ("הסופית", "סופית"), ("היא", "הוא"), ("אפשרות", "האפשרות")
    ),
    "hi": AnswerWords(
        ("उत्तर", "जवाब"), ("सही",), ("अंतिम",), (), ("विकल्प",), correction=("रुकिए",), source="simple-evals, lighteval"
    ),
    "id": AnswerWords(
        ("jawaban", "jawabannya"),
        ("benar", "yang benar", "tepat", "yang tepat"),
        ("akhir",),
        ("adalah", "ialah"),
        ("pilihan", "opsi"),
        correction=("tunggu", "sebenarnya"),
        source="simple-evals, lighteval",
    ),
    "ig": AnswerWords(("azịza", "azisa"), ("ziri ezi", "kwesịrị ekwesị"), ("ikpeazụ",), ("bụ",), ("nhọrọ",)),
    "it": AnswerWords(
        ("risposta",),
        ("corretta", "giusta", "esatta"),
        ("finale",),
        ("è", "sarebbe"),
        ("opzione", "alternativa", "lettera"),
        ("la", "il"),
        ("aspetta", "in realtà"),
        source="simple-evals, lighteval",
    ),
    "ky": AnswerWords(("жооп",), ("туура",), ("акыркы",), (), ("вариант",)),
    "lt": AnswerWords(("atsakymas",), ("teisingas",), ("galutinis",), ("yra",), ("variantas", "pasirinkimas")),
    "mg": AnswerWords(("valiny",), ("marina", "mety"), ("farany",), ("dia",), ("safidy",)),
    "ms": AnswerWords(
        ("jawapan", "jawapannya"), ("betul", "yang betul"), ("akhir",), ("ialah", "adalah"), ("pilihan",)
    ),
    "ne": AnswerWords(("उत्तर", "जवाफ"), ("सही",), ("अन्तिम", "अंतिम"), (), ("विकल्प",)),
    "nl": AnswerWords(
        ("antwoord",),
        ("juiste", "correcte", "goede"),
        ("definitieve",),
        ("is", "luidt"),
        ("optie", "keuze"),
        ("het",),
        ("wacht", "eigenlijk"),
        source="lighteval",
    ),
    "ny": AnswerWords(("yankho",), ("yolondola", "lolondola"), ("lomaliza",), ("ndi",), ("chosankha",)),
    "pl": AnswerWords(
        ("odpowiedź", "odpowiedz"),
        ("poprawna", "prawidłowa", "właściwa", "poprawną", "prawidłową"),
        ("ostateczna",),
        ("to", "jest"),
        ("opcja", "wariant"),
        correction=("czekaj", "właściwie", "poprawka"),
        source="lighteval",
    ),
    "pt": AnswerWords(
        ("resposta",),
        ("correta", "correcta", "certa"),
        ("final",),
        ("é", "seria"),
        ("opção", "opcao", "alternativa", "letra"),
        ("a", "o"),
        ("espere", "na verdade", "correção"),
        source="simple-evals, lighteval",
    ),
    "ro": AnswerWords(
        ("răspuns", "răspunsul", "raspuns", "raspunsul"),
        ("corect", "corectă"),
        ("final", "finală"),
        ("este",),
        ("opțiunea", "varianta", "opțiune", "variantă"),
    ),
    "ru": AnswerWords(
        ("ответ",),
        ("правильный", "верный"),
        ("окончательный", "итоговый"),
        ("это",),
        ("вариант", "пункт"),
        correction=("подождите", "подожди", "на самом деле"),
        source="lighteval",
    ),
    "si": AnswerWords(("පිළිතුර",), ("නිවැරදි",), ("අවසාන",), (), ("විකල්පය",)),
    "sn": AnswerWords(("mhinduro",), ("chaiyo", "yakarurama"), ("yekupedzisira",), ("ndi",), ("sarudzo",)),
    "so": AnswerWords(("jawaab", "jawaabta"), ("saxda ah", "saxda"), ("kama dambaysta ah",), ("waa",), ("doorashada",)),
    "sr": AnswerWords(
        ("одговор", "odgovor"),
        ("тачан", "исправан", "tačan", "ispravan"),
        ("коначни", "konačni"),
        ("је", "je"),
        ("опција", "opcija"),
        source="lighteval",
    ),
    "sv": AnswerWords(
        ("svar", "svaret"),
        ("rätt", "rätta", "korrekta"),
        ("slutliga",),
        ("är",),
        ("alternativ",),
        source="lighteval",
    ),
    "sw": AnswerWords(("jibu",), ("sahihi",), ("la mwisho",), ("ni",), ("chaguo",), source="simple-evals, lighteval"),
    "te": AnswerWords(("జవాబు", "సమాధానం"), ("సరైన",), ("తుది",), (), ("ఎంపిక",), source="lighteval"),
    "tr": AnswerWords(
        ("cevap", "yanıt", "cevabı", "yanıtı"),
        ("doğru",),
        ("nihai",),
        (),
        ("seçenek", "şık", "şıkkı"),
        correction=("bekle", "aslında"),
        source="lighteval",
    ),
    "uk": AnswerWords(
        ("відповідь",), ("правильна", "правильною"), ("остаточна",), ("це",), ("варіант",), source="lighteval"
    ),
    "vi": AnswerWords(
        ("đáp án", "câu trả lời", "trả lời"),
        ("đúng",),
        ("cuối cùng",),
        ("là",),
        ("phương án", "lựa chọn"),
        correction=("khoan", "thực ra"),
        source="lighteval",
    ),
    "yo": AnswerWords(
        ("ìdáhùn", "idahun", "ìdáhùn", "àdáhùn"),
        ("tó tọ́", "tó péye"),
        ("ìkẹyìn",),
        ("ni",),
        ("àṣàyàn",),
        source="simple-evals",
    ),
}

# adverbs between "is" and the letter ("Die Antwort ist eindeutig C", "La respuesta es claramente la C"); project
ADVERBS = (
    "eindeutig", "wahrscheinlich", "sicher", "claramente", "probablemente", "definitivamente", "seguramente",
    "clairement", "probablement", "certainement", "certamente", "provavelmente", "chiaramente", "probabilmente",
    "duidelijk", "waarschijnlijk", "очевидно", "вероятно", "скорее всего", "بالتأكيد", "على الأرجح", "jelas",
    "kemungkinan", "açıkça", "muhtemelen", "rõ ràng", "có lẽ",
)  # fmt: skip

# "or" and "and" between letters ("A o C", "B oder D", "أ أو ج"): a reply naming two letters so is ambiguous.
# Source: lighteval's or_word where it has one (es, pt, it, de, cs, nl, el, id, pl, sr, sv, uk, vi), else project.
OR_AND_WORDS = (
    "o", "u", "y", "ou", "et", "e", "oppure", "oder", "und", "of", "en", "eller", "och", "lub", "albo", "nebo",
    "или", "и", "або", "чи", "і", "та", "ili", "ή", "και", "veya", "ya da", "ve", "atau", "dan", "hoặc", "và",
    "أو", "یا", "או", "या", "अथवा", "और", "বা", "অথবা", "এবং", "au", "na", "sau", "și", "at",
)  # fmt: skip

# Option letters written in a script's own letters, by the multiple-choice convention of the languages using it:
# Arabic (أ ب ج د, simple-evals), Persian (الف ب ج د), Hebrew (א ב ג ד), Greek (Α Β Γ Δ), Cyrillic (А Б В Г;
# Russian, Ukrainian, Serbian, Kyrgyz), Devanagari (क ख ग घ and अ ब स द; Hindi, Nepali), Bengali (ক খ গ ঘ, and
# অ ব ড ঢ as simple-evals reads MMMLU), Ethiopic (ሀ ለ ሐ መ; Amharic). Each tuple lists A, B, C, D, E.
NATIVE_LETTERS: dict[str, tuple[str, ...]] = {
    "arabic": ("أ", "ب", "ج", "د", "هـ"),
    "persian": ("الف", "ب", "ج", "د", "ه"),
    "hebrew": ("א", "ב", "ג", "ד", "ה"),
    "greek": ("Α", "Β", "Γ", "Δ", "Ε"),
    "cyrillic": ("А", "Б", "В", "Г", "Д"),
    "devanagari": ("क", "ख", "ग", "घ", "ङ"),
    "devanagari-hindi": ("अ", "ब", "स", "द"),
    "bengali": ("ক", "খ", "গ", "ঘ", "ঙ"),
    "bengali-mmmlu": ("অ", "ব", "ড", "ঢ"),
    "ethiopic": ("ሀ", "ለ", "ሐ", "መ", "ሠ"),
}
# Cyrillic В is the third letter (C) by the alphabet but looks like Latin B: read both ways, and a reply whose
# answer depends on which is ambiguous. Cyrillic С looks like Latin C (and is no option by the alphabet).
HOMOGLYPHS = {"В": "B", "С": "C"}
