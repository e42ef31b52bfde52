"""The self-test's result type: a fault in one check is a FAIL with its reason, never the end
of the run, and a report's status is its worst check's."""

from __future__ import annotations

from selftest.result import CheckResult, run_check, worst


def test_an_exception_in_a_check_is_a_fail_naming_it():
    def broken() -> list[CheckResult]:
        raise FileNotFoundError("/mnt/shared-data is not mounted")

    (result,) = run_check("storage", broken)
    assert result.status == "FAIL"
    assert result.name == "storage"
    assert result.reason == "FileNotFoundError: /mnt/shared-data is not mounted"


def test_a_report_is_as_bad_as_its_worst_check():
    assert worst(["PASS", "WARN", "SKIP"]) == "WARN"
    assert worst(["PASS", "FAIL", "WARN"]) == "FAIL"
    assert worst(["SKIP", "SKIP"]) == "SKIP"
    assert worst([]) == "SKIP"


def test_a_figure_without_a_threshold_is_info_and_judges_nothing():
    # A report's status is one of the four: INFO never raises or becomes it.
    assert worst(["PASS", "INFO"]) == "PASS"
    assert worst(["INFO", "SKIP"]) == "SKIP"
    assert worst(["INFO"]) == "SKIP"
    assert worst(["WARN", "INFO"]) == "WARN"


def test_plot_series_stay_out_of_the_json_check():
    # Issue 10: a check in the report has exactly these keys.
    check = CheckResult("allreduce", "PASS", 1.5, "GB/s", details={"sizes": [1, 2]})
    assert set(check.as_json()) == {
        "name", "status", "value", "unit", "threshold", "source", "reason", "duration_s",
    }  # fmt: skip
