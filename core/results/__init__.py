"""The Results page's data: metric panels by family, the published overlay, the gender-probe views."""
