"""Commands around the program: the config reference, a region's offers, the recipes' settings and
the self-test's bootstrap."""
