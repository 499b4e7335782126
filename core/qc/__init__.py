"""Human quality control of synthesized speech (BiasInEar 2.2, App. B.4): stratified sampling into named rating
queues, rating results (Table 3), annotator agreement, and the combined QC report."""
