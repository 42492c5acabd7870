"""One date format across the admin: ISO dates, 24-hour times (UTC, as stored and as the API answers)."""

DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
MONTH_DAY_FORMAT = "M j"
YEAR_MONTH_FORMAT = "Y-m"
