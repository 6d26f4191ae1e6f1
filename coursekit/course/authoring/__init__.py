"""The author's and instructor's tools that build what students get: the student folder and zip
(``coursekit release``), the answer-line check that keeps solutions out of it, the notebooks' setup
cell and the README's Colab table, all from one repository address."""
