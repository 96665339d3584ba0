"""mx.viz: plot_network (Graphviz source and a real `dot` rendering) and print_summary."""
from __future__ import annotations

import re
import shutil
import warnings

import pytest

import symjit as mx
from symjit.base import MXNetError


def mlp():
    """The tutorial MLP: data -> FC(128) -> relu -> FC(64) -> relu -> FC(10) -> SoftmaxOutput."""
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, name="fc1", num_hidden=128)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=64)
    net = mx.sym.Activation(net, name="relu2", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc3", num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def lenet_block():
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    net = mx.sym.BatchNorm(net, name="bn1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    net = mx.sym.Flatten(net, name="flat")
    return mx.sym.FullyConnected(net, num_hidden=10, name="fc")


EDGE = re.compile(r'^\t(\S+) -> (\S+) \[label=("[^"]*"|\S+)', re.M)
NODE = re.compile(r'^\t(\S+) \[label=("[^"]*"|\S+) fillcolor="(#[0-9a-f]{6})"', re.M)


def edges(dot) -> set[tuple[str, str, str]]:
    """(consumer, input, edge label) for every edge of the Graphviz source."""
    return {(a, b, lab.strip('"')) for a, b, lab in EDGE.findall(dot.source)}


def nodes(dot) -> dict[str, tuple[str, str]]:
    """node name -> (label, fill colour)."""
    return {n: (lab.strip('"'), col) for n, lab, col in NODE.findall(dot.source)}


# ------------------------------------------------------------------------------------------------
# plot_network


def test_mlp_nodes_labels_and_colours():
    dot = mx.viz.plot_network(mlp(), shape={"data": (100, 784)})
    assert nodes(dot) == {
        "data": ("data", "#8dd3c7"),
        "fc1": (r"FullyConnected\n128", "#fb8072"),
        "relu1": (r"Activation\nrelu", "#ffffb3"),
        "fc2": (r"FullyConnected\n64", "#fb8072"),
        "relu2": (r"Activation\nrelu", "#ffffb3"),
        "fc3": (r"FullyConnected\n10", "#fb8072"),
        "softmax_label": ("softmax_label", "#8dd3c7"),
        "softmax": ("SoftmaxOutput", "#b3de69"),
    }


def test_mlp_edges_carry_shapes_without_batch_dim():
    dot = mx.viz.plot_network(mlp(), shape={"data": (100, 784)})
    assert edges(dot) == {
        ("fc1", "data", "784"), ("relu1", "fc1", "128"), ("fc2", "relu1", "128"),
        ("relu2", "fc2", "64"), ("fc3", "relu2", "64"), ("softmax", "fc3", "10"),
        ("softmax", "softmax_label", ""),  # label shape (100,) has nothing after the batch dim
    }
    assert "dir=back" in dot.source and "arrowtail=open" in dot.source


def test_no_shape_gives_empty_edge_labels():
    assert {lab for _, _, lab in edges(mx.viz.plot_network(mlp()))} == {""}


def test_hide_weights():
    hidden = mx.viz.plot_network(mlp(), shape={"data": (100, 784)})
    assert not any(n.endswith(("_weight", "_bias")) for n in nodes(hidden))
    shown = mx.viz.plot_network(mlp(), shape={"data": (100, 784)}, hide_weights=False)
    shown_nodes = nodes(shown)
    for layer in ("fc1", "fc2", "fc3"):
        assert shown_nodes[f"{layer}_weight"] == (f"{layer}_weight", "#8dd3c7")
        assert shown_nodes[f"{layer}_bias"] == (f"{layer}_bias", "#8dd3c7")
    # weight (128, 784) -> "784"; bias (128,) -> ""
    expected = {("fc1", "fc1_weight", "784"), ("fc1", "fc1_bias", ""), ("fc2", "fc2_weight", "128")}
    assert expected <= edges(shown)


def test_batchnorm_params_and_aux_hidden():
    dot = mx.viz.plot_network(lenet_block(), shape={"data": (2, 1, 28, 28)})
    assert set(nodes(dot)) == {"data", "conv1", "bn1", "tanh1", "pool1", "flat", "fc"}


def test_conv_pool_labels_and_shapes():
    dot = mx.viz.plot_network(lenet_block(), shape={"data": (2, 1, 28, 28)})
    got = nodes(dot)
    assert got["conv1"] == (r"Convolution\n5x5/1x1, 20", "#fb8072")
    assert got["bn1"] == ("BatchNorm", "#bebada")
    assert got["pool1"] == (r"Pooling\nmax, 2x2/2x2", "#80b1d3")
    assert got["flat"] == ("Flatten", "#fdb462")
    # 28-5+1 = 24; 24/2 = 12; 20*12*12 = 2880
    assert edges(dot) == {
        ("conv1", "data", "1x28x28"), ("bn1", "conv1", "20x24x24"), ("tanh1", "bn1", "20x24x24"),
        ("pool1", "tanh1", "20x24x24"), ("flat", "pool1", "20x12x12"), ("fc", "flat", "2880"),
    }


def test_global_pool_and_other_op_colour():
    data = mx.sym.Variable("data")
    net = mx.sym.Pooling(data, pool_type="avg", global_pool=True, kernel=(1, 1), name="gp")
    net = mx.sym.exp(net, name="e")
    got = nodes(mx.viz.plot_network(net))
    assert got["gp"] == (r"Pooling\navg, global", "#80b1d3")
    assert got["e"][1] == "#fccde5"


def test_dtype_labels():
    dot = mx.viz.plot_network(mlp(), shape={"data": (100, 784)}, dtype={"data": "float32"})
    assert ("fc1", "data", "784(float32)") in edges(dot)


def test_title_format_and_node_attrs():
    dot = mx.viz.plot_network(mlp(), title="mlp", save_format="png",
                              node_attrs={"shape": "oval", "fixedsize": "false"})
    assert dot.name == "mlp" and dot.format == "png"
    assert dot.source.startswith("digraph mlp {")
    assert "shape=oval" in dot.source and "shape=box" not in dot.source
    assert "fixedsize=false" in dot.source


def test_multi_output_edges():
    data = mx.sym.Variable("data")
    parts = mx.sym.SliceChannel(data, num_outputs=2, axis=1, name="sl")
    fc = mx.sym.FullyConnected(parts[1], num_hidden=3, name="fc")
    net = mx.sym.Group([parts[0], fc])
    dot = mx.viz.plot_network(net, shape={"data": (4, 6)})
    assert ("fc", "sl", "3") in edges(dot) and ("sl", "data", "6") in edges(dot)


def test_renders_svg_with_dot():
    assert shutil.which("dot"), "Graphviz `dot` is required (apt-get install graphviz)"
    svg = mx.viz.plot_network(mlp(), shape={"data": (100, 784)}).pipe(format="svg").decode()
    assert svg.lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE"))
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    for word in ("data", "FullyConnected", "128", "64", "10", "Activation", "relu", "SoftmaxOutput",
                 "softmax_label", "784"):
        assert word in texts, word
    assert texts.count("FullyConnected") == 3 and texts.count("relu") == 2


def test_plot_errors():
    with pytest.raises(TypeError, match="plot_network.*symbol.*Symbol") as err:
        mx.viz.plot_network("not a symbol")
    assert isinstance(err.value, MXNetError)
    with pytest.raises(MXNetError, match="plot_network.*shape"):
        mx.viz.plot_network(mlp(), shape=[(100, 784)])
    with pytest.raises(MXNetError, match="plot_network.*node_attrs"):
        mx.viz.plot_network(mlp(), node_attrs="oval")
    with pytest.raises(MXNetError, match="plot_network"):
        mx.viz.plot_network(mlp(), shape={"softmax_label": (100,)})  # data's shape is missing


# ------------------------------------------------------------------------------------------------
# print_summary


def table_rows(out: str) -> list[list[str]]:
    """The rows between the header and the totals, as columns split on runs of 2+ spaces."""
    lines = out.splitlines()
    body = lines[lines.index(next(x for x in lines if x.startswith("="))) + 1:]
    rows = []
    for line in body:
        if line.startswith(("_", "=", "Total params")):
            continue
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_summary_mlp(capsys):
    mx.viz.print_summary(mlp(), shape={"data": (100, 784)})
    out = capsys.readouterr().out
    fc1, fc2, fc3 = 784 * 128 + 128, 128 * 64 + 64, 64 * 10 + 10
    assert (fc1, fc2, fc3) == (100480, 8256, 650)
    assert table_rows(out) == [
        ["data(null)", "784", "0"],
        ["fc1(FullyConnected)", "128", str(fc1), "data"],
        ["relu1(Activation)", "128", "0", "fc1"],
        ["fc2(FullyConnected)", "64", str(fc2), "relu1"],
        ["relu2(Activation)", "64", "0", "fc2"],
        ["fc3(FullyConnected)", "10", str(fc3), "relu2"],
        ["softmax(SoftmaxOutput)", "10", "0", "fc3"],
    ]
    assert f"Total params: {fc1 + fc2 + fc3}" in out.splitlines()


def test_summary_layout(capsys):
    mx.viz.print_summary(mlp(), shape={"data": (100, 784)})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "_" * 120 and lines[2] == "=" * 120 and lines[-1] == "_" * 120
    header = lines[1]
    # columns end at 120 * (.44, .64, .74): the next column starts right there
    assert header.index("Output Shape") == 52 and header.index("Param #") == 76
    assert header.index("Previous Layer") == 88
    assert lines[-3] == "=" * 120  # the last layer closes with '='
    fc1_line = next(x for x in lines if x.startswith("fc1("))
    assert fc1_line[52:].startswith("128") and fc1_line[76:].startswith("100480")


def test_summary_absolute_positions(capsys):
    mx.viz.print_summary(mlp(), shape={"data": (100, 784)}, line_length=70, positions=[30, 45, 55, 70])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "_" * 70
    assert lines[1].index("Output Shape") == 30 and lines[1].index("Param #") == 45


def test_summary_conv_batchnorm(capsys):
    mx.viz.print_summary(lenet_block(), shape={"data": (2, 1, 28, 28)})
    rows = table_rows(capsys.readouterr().out)
    conv = 20 * 1 * 5 * 5 + 20
    bn = 2 * 20  # gamma and beta; moving mean/var are aux states, not parameters
    fc = 20 * 12 * 12 * 10 + 10
    assert [r[:3] for r in rows] == [
        ["data(null)", "1x28x28", "0"], ["conv1(Convolution)", "20x24x24", str(conv)],
        ["bn1(BatchNorm)", "20x24x24", str(bn)], ["tanh1(Activation)", "20x24x24", "0"],
        ["pool1(Pooling)", "20x12x12", "0"], ["flat(Flatten)", "2880", "0"],
        ["fc(FullyConnected)", "10", str(fc)],
    ]


def test_summary_several_previous_layers_and_shared_weight(capsys):
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("shared_weight")
    a = mx.sym.FullyConnected(data, weight=w, num_hidden=4, no_bias=True, name="a")
    b = mx.sym.FullyConnected(data, weight=w, num_hidden=4, no_bias=True, name="b")
    net = mx.sym.elemwise_add(a, b, name="sum")
    mx.viz.print_summary(net, shape={"data": (2, 3)})
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert rows[1] == ["a(FullyConnected)", "4", "12", "data"]
    assert rows[2] == ["b(FullyConnected)", "4", "0", "data"]  # the shared weight counts once
    assert rows[3] == ["sum(elemwise_add)", "4", "0", "a"]
    assert rows[4] == ["b"]  # a second previous layer gets its own line
    assert "Total params: 12" in out


def test_summary_without_shape(capsys):
    mx.viz.print_summary(mlp())
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert rows[0] == ["data(null)", "0"]
    assert rows[1] == ["fc1(FullyConnected)", "data"]  # shape and count unknown: blank
    assert rows[2] == ["relu1(Activation)", "0", "fc1"]
    assert "Total params: unknown (give shape= to count)" in out


def test_summary_errors():
    with pytest.raises(TypeError, match="print_summary.*symbol"):
        mx.viz.print_summary(42)
    with pytest.raises(MXNetError, match="print_summary.*shape"):
        mx.viz.print_summary(mlp(), shape=(100, 784))
    with pytest.raises(MXNetError, match="print_summary.*positions"):
        mx.viz.print_summary(mlp(), positions=[.5, 1.])
    with pytest.raises(MXNetError, match="print_summary"):
        mx.viz.print_summary(mlp(), shape={"softmax_label": (100,)})


def test_plot_network_warns_once_about_repeated_names():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=4)
    net = mx.sym.FullyConnected(mx.sym.relu(net, name="r"), name="fc", num_hidden=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.viz.plot_network(net, shape={"data": (2, 3)})
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "multiple variables with the same name" in message and "fc" in message and "r," not in message
