"""An example curate plugin: one stage, one extractor, one rule set, each a module registered by its decorator."""
