"""What users read and paste: statistics, tables, procedure layouts, exports, compare, plots."""
