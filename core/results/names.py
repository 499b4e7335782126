"""The Results panels' names and the papers they mirror: plain constants, importable without pandas (the app's
tour and sidebar need them before, and without, any computation)."""

PAPERS = {
    "biasinear": "BiasInEar",
    "hearing_the_order": "Hearing the Order",
    "gender_differentiation": "Acoustic-based Gender Differentiation",  # PAPER_TITLES' short form
}
PAPER_TITLES = {
    "biasinear": "Bias in the Ear of the Listener (BiasInEar)",
    "hearing_the_order": "Hearing the Order: Investigating Selection Bias in Large Audio-Language Models",
    "gender_differentiation": "Acoustic-based Gender Differentiation in Speech-aware Language Models",
}
# The panels in the order the page lists them
PANEL_ORDER = (
    "accuracy_by_level",
    "entropy_distribution",
    "kappa_vs_apes",
    "entropy_cs_ca",
    "gold_position",
    "permutation_voting",
    "ranking_changes",
    "mcnemar",
    "gender_probe",
)
