# openmetrics_parse.py - parse an OpenMetrics text exposition (the file
# named by argv[1]) with prometheus_client's strict parser and print one
# line per sample: "name{label=value,...} value", labels sorted, for the
# C test that reads them (tests/metrics_test.c).  Exit 2 when the parser
# module is missing, 1 when the text does not parse.
import sys

try:
    from prometheus_client.openmetrics.parser import \
        text_string_to_metric_families
except ImportError:
    print("python3-prometheus-client is not installed", file=sys.stderr)
    sys.exit(2)

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
try:
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
            print("%s{%s} %r" % (s.name, labels, float(s.value)))
except Exception as e:  # the parser raises ValueError and others
    print("does not parse: %s" % e, file=sys.stderr)
    sys.exit(1)
