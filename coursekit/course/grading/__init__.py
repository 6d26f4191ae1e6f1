"""The instructor's grader, a pipeline of stages (``python -m coursekit grade``).

* find: :mod:`.submissions` (what was handed in, refused safely), :mod:`.lms` (a Canvas or Moodle
  download as it comes), :mod:`.assignment` (which exercises);
* run: :mod:`.runner` runs one notebook in its own process (:mod:`.child`, :mod:`.execute`,
  :mod:`.execute_imports`), inside a sandbox (:mod:`.sandbox`, :mod:`.rungroup`), with a shared
  compiled-kernel cache (:mod:`.kernel_cache`), locally or on a Dask cluster (:mod:`.cluster`);
* judge: :mod:`.judge` replays each graded check on the reported observations, :mod:`.outcomes` says
  what happened to every cell, :mod:`.scrutiny` lists cells worth a person's reading;
* report: :mod:`.report`, :mod:`.export`, :mod:`.regrade`, :mod:`.scores`, :mod:`.escape`; the LMS round
  trip's roster and gradebook files: :mod:`.roster`, :mod:`.roundtrip` (the ``grade`` command's steps).

:mod:`.grader` strings the stages together; :mod:`.pytest_plugin` runs them under pytest. Nothing here
imports the array compiler.
"""
