# SPDX-License-Identifier: BSD-3-Clause
"""What check_cost_model.sh's Python checks share: a tuning file's rules read as the component
reads them (coll_gpu_tuning.c: collective, comm_size, ranks_per_node, bytes, algorithm; a field
is "*", a number, or a range "lo-hi" / "lo-"; the first rule that matches wins), and the grids
perf/cost_model --crossovers places its thresholds on."""

# CROSSOVER_GRID and CROSSOVER_NODES of perf/cost_model
GRID = sorted(set([1 << k for k in range(3, 10)] +
                  [(q << k) // 4 for k in range(10, 31) for q in (4, 5, 6, 7)]))
NODES = "2,3,4,6,8,12,16,24,32,48,64,128,256,512,1024"


def in_range(field, v):
    """Whether a rule's field takes v."""
    if field == "*":
        return True
    lo, dash, hi = field.partition("-")
    if not dash:
        return v == int(lo)
    return int(lo) <= v and (hi == "" or v <= int(hi))


def rule_alg(conf, coll, size, rpn, nbytes, staged=True):
    """The algorithm of the first rule of the tuning file conf that matches a call of coll on
    size ranks, rpn per node, of nbytes (None: none); staged False: the staged rules passed over
    (those of device buffers, before the rows')."""
    with open(conf) as f:
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#") or (not staged and w[4] == "staged"):
                continue
            if w[0] == coll and in_range(w[1], size) and in_range(w[2], rpn) and \
                    in_range(w[3], nbytes):
                return w[4]
    return None
