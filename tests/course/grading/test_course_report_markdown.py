"""grades.md shows reasons and names literally: a NameError about __name__ is not bold (issue 14)."""
import mistune

from coursekit.course.grading.grader import Score
from coursekit.course.grading.report import summary_markdown


def test_reasons_names_and_warnings_are_not_markdown():
    scores = [Score("__init__", "01_tour_exercises", "running-mean", 0, 2,
                    "error: NameError: name '__name__' is not defined (see *notes* | [link])"),
              Score("alice_b", "01_tour_exercises", "running-mean", 2, 2, "passed")]
    text = summary_markdown(scores, warnings=["ignored __pycache__/x.ipynb"])
    html = mistune.html(text)
    assert "<strong>name</strong>" not in html and "<em>notes</em>" not in html
    assert "'__name__'" in html and "[link]" in html and "__init__" in html and "__pycache__" in html
    assert "alice_b" in text, "underscores inside a word need no escaping"
