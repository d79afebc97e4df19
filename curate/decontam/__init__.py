"""Downstream-task decontamination (MT-NLG): cut evaluation 13-grams out of the training corpus.

* ``ngrams``: words and 64-bit n-gram hashes, vectorised with numpy;
* ``index``: the evaluation keys as sorted uint64 arrays, memory-mapped by the workers;
* ``evalsets``: evaluation sets from local files or the hub;
* ``cut``: finding keys in documents and MT-NLG's cutting rule (the map stage);
* ``run``: the stage: three phases (index, count, cut) over a dataset directory;
* ``reference``: the same rule in plain Python with a set of strings (tests, benchmark).
"""
