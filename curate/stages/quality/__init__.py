"""Quality classifier (GPT-3 / MT-NLG): fastText learns curated text (positives) vs raw CommonCrawl (negatives).

* :mod:`.data`: text normalisation, id hashing and the Pareto draws, the training sample and
  the cross-fitting folds: what training and scoring must compute alike;
* :mod:`.train`: ``curate quality train`` (:class:`QualityTrain`): fastText trained in a fresh
  process, one model per fold, out-of-fold metrics (ROC AUC, precision, recall, F1), the model
  directory and its record;
* :mod:`.score`: ``curate quality score`` (:class:`QualityStage`): the map stage that writes
  ``quality_score`` (or a column per classifier) and keeps documents by mode (annotate, threshold, pareto);
* :mod:`.bucket`: ``curate quality bucket`` (:class:`QualityBucket`): exact weighted percentile
  buckets of score columns over the whole input, ``quality_bucket`` the maximum (Nemotron-CC).

Model files are read, checked and predicted with by :mod:`curate.fasttext` (fastText itself
loops forever on a truncated model and accepts a 4-byte file as an empty model).
"""

from curate.stages.quality.bucket import QualityBucket
from curate.stages.quality.score import QualityStage
from curate.stages.quality.train import QualityTrain

__all__ = ["QualityBucket", "QualityStage", "QualityTrain"]
