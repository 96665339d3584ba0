"""Per-image routines of the SSD operators (:mod:`symjit.ops.detection`): plain functions over
the arrays of a batch and an image index ``n``, wrapped per target like the scalar bodies, so the
target's loop runs one image per iteration or CUDA thread (:mod:`symjit.lower.detection`). Boxes
are ``(xmin, ymin, xmax, ymax)``; scratch comes from planned workspace buffers.
"""
from __future__ import annotations

import math

from ..jitext import jitable

__all__ = ["box_iou", "match_anchors", "decode_detections", "suppress", "corner_iou", "nms_candidates",
           "nms_write", "nms_backward", "encode_boxes", "greedy_match", "proposal_boxes", "proposal_select"]


@jitable
def box_iou(ax0, ay0, ax1, ay1, bx0, by0, bx1, by1):
    """Intersection over union of two boxes (0 when the union is empty)."""
    iw = min(ax1, bx1) - max(ax0, bx0)
    ih = min(ay1, by1) - max(ay0, by0)
    inter = (iw if iw > 0.0 else 0.0) * (ih if ih > 0.0 else 0.0)
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    return inter / union if union > 0.0 else 0.0


def match_anchors(anchor, label, cls_pred, loc_t, loc_m, cls_t, ov, flags, match, best, n, num_anchors,
                  num_labels, num_classes, overlap_threshold, ignore_label, mining_ratio, mining_thresh,
                  min_negatives, v0, v1, v2, v3):
    """MultiBoxTarget for image ``n``: bipartite matching (each ground truth box takes the free
    anchor it overlaps most, largest overlap first), then every other anchor whose best overlap
    exceeds ``overlap_threshold``; negatives are the rest, or with ``mining_ratio > 0`` only the
    ``ratio * positives`` (at least ``min_negatives``) with the lowest background probability among
    those overlapping less than ``mining_thresh``, the others ignored. Scratch: ``ov[n]`` (anchors x
    labels), ``flags``/``match`` (int64) and ``best`` per anchor."""
    g = 0
    while g < num_labels and label[n, g, 0] != -1.0:
        g += 1
    for i in range(num_anchors):
        flags[n, i] = -1
        match[n, i] = -1
        best[n, i] = -1.0
        for c in range(4):
            loc_t[n, i, c] = 0.0
            loc_m[n, i, c] = 0.0
        for j in range(g):
            ov[n, i, j] = box_iou(anchor[i, 0], anchor[i, 1], anchor[i, 2], anchor[i, 3],
                                  label[n, j, 1], label[n, j, 2], label[n, j, 3], label[n, j, 4])
    if g > 0:
        done = 0
        while done < g:                         # bipartite: the largest free overlap first
            bi = -1
            bj = -1
            bo = 1e-6
            for j in range(g):
                taken = False
                for i in range(num_anchors):
                    if flags[n, i] == 1 and match[n, i] == j:
                        taken = True
                        break
                if taken:
                    continue
                for i in range(num_anchors):
                    if flags[n, i] != 1 and ov[n, i, j] > bo:
                        bo = ov[n, i, j]
                        bi = i
                        bj = j
            if bi < 0:
                break
            flags[n, bi] = 1
            match[n, bi] = bj
            best[n, bi] = bo
            done += 1
        for i in range(num_anchors):
            if flags[n, i] == 1:
                continue
            bj = 0
            for j in range(1, g):
                if ov[n, i, j] > ov[n, i, bj]:
                    bj = j
            best[n, i] = ov[n, i, bj]
            if overlap_threshold > 0.0 and ov[n, i, bj] > overlap_threshold:
                flags[n, i] = 1
                match[n, i] = bj
        if mining_ratio > 0.0:
            positives = 0
            for i in range(num_anchors):
                if flags[n, i] == 1:
                    positives += 1
            want = mining_ratio * positives
            if want < min_negatives:
                want = min_negatives
            if want > num_anchors - positives:
                want = num_anchors - positives
            for i in range(num_anchors):        # background probability of the candidates
                if flags[n, i] != 1 and best[n, i] < mining_thresh:
                    top = cls_pred[n, 0, i]
                    for c in range(1, num_classes):
                        top = max(top, cls_pred[n, c, i])
                    total = 0.0
                    for c in range(num_classes):
                        total += math.exp(cls_pred[n, c, i] - top)
                    best[n, i] = math.exp(cls_pred[n, 0, i] - top) / total
                else:
                    best[n, i] = 2.0            # not a candidate
            picked = 0
            while picked < want:                # the lowest background probability first
                low = -1
                for i in range(num_anchors):
                    if best[n, i] <= 1.0 and (low < 0 or best[n, i] < best[n, low]):
                        low = i
                if low < 0:
                    break
                flags[n, low] = 0
                best[n, low] = 2.0
                picked += 1
        else:
            for i in range(num_anchors):
                if flags[n, i] != 1:
                    flags[n, i] = 0
    for i in range(num_anchors):
        if flags[n, i] == 1:
            j = match[n, i]
            aw = anchor[i, 2] - anchor[i, 0]
            ah = anchor[i, 3] - anchor[i, 1]
            gw = label[n, j, 3] - label[n, j, 1]
            gh = label[n, j, 4] - label[n, j, 2]
            dx = (label[n, j, 1] + label[n, j, 3]) - (anchor[i, 0] + anchor[i, 2])
            dy = (label[n, j, 2] + label[n, j, 4]) - (anchor[i, 1] + anchor[i, 3])
            loc_t[n, i, 0] = dx * 0.5 / aw / v0
            loc_t[n, i, 1] = dy * 0.5 / ah / v1
            loc_t[n, i, 2] = math.log(gw / aw) / v2
            loc_t[n, i, 3] = math.log(gh / ah) / v3
            for c in range(4):
                loc_m[n, i, c] = 1.0
            cls_t[n, i] = label[n, j, 0] + 1.0
        elif flags[n, i] == 0:
            cls_t[n, i] = 0.0
        else:
            cls_t[n, i] = ignore_label


def decode_detections(cls_prob, loc, anchor, rows, score, n, num_anchors, num_classes, threshold, clip,
                      v0, v1, v2, v3):
    """Image ``n``'s anchors whose best foreground probability reaches ``threshold``, decoded, in
    anchor order into ``rows[n]`` ((class - 1, score, box) each) with their scores in
    ``score[n, :, 0]``; returns how many."""
    count = 0
    for i in range(num_anchors):
        top = -1.0
        cid = 0
        for c in range(1, num_classes):
            if cls_prob[n, c, i] > top:
                top = cls_prob[n, c, i]
                cid = c
        if top < threshold:
            continue
        aw = anchor[i, 2] - anchor[i, 0]
        ah = anchor[i, 3] - anchor[i, 1]
        cx = loc[n, i, 0] * v0 * aw + (anchor[i, 0] + anchor[i, 2]) * 0.5
        cy = loc[n, i, 1] * v1 * ah + (anchor[i, 1] + anchor[i, 3]) * 0.5
        hw = math.exp(loc[n, i, 2] * v2) * aw * 0.5
        hh = math.exp(loc[n, i, 3] * v3) * ah * 0.5
        rows[n, count, 0] = cid - 1.0
        rows[n, count, 1] = top
        rows[n, count, 2] = cx - hw
        rows[n, count, 3] = cy - hh
        rows[n, count, 4] = cx + hw
        rows[n, count, 5] = cy + hh
        if clip:
            for c in range(2, 6):
                rows[n, count, c] = min(max(rows[n, count, c], 0.0), 1.0)
        score[n, count, 0] = top
        count += 1
    return count


def suppress(rows, order, out, n, count, num_anchors, keep, nms_threshold, force_suppress):
    """Write image ``n``'s rows into ``out[n]`` by descending score (``order[n, :, 0]``), rows
    after ``keep`` with class -1, then non-maximum suppression among the first ``keep``: a box
    overlapping a better one of its class (any class with ``force_suppress``) by more than
    ``nms_threshold`` gets class -1; rows past ``count`` are all -1."""
    for q in range(count):
        for c in range(6):
            out[n, q, c] = rows[n, order[n, q, 0], c]
        if q >= keep:
            out[n, q, 0] = -1.0
    for q in range(count, num_anchors):
        for c in range(6):
            out[n, q, c] = -1.0
    for q in range(keep):
        if out[n, q, 0] < 0.0:
            continue
        for r in range(q + 1, keep):
            if out[n, r, 0] < 0.0:
                continue
            if force_suppress or out[n, q, 0] == out[n, r, 0]:
                if box_iou(out[n, q, 2], out[n, q, 3], out[n, q, 4], out[n, q, 5],
                           out[n, r, 2], out[n, r, 3], out[n, r, 4], out[n, r, 5]) > nms_threshold:
                    out[n, r, 0] = -1.0


@jitable
def corner_iou(a0, a1, a2, a3, b0, b1, b2, b3, center):
    """IoU of two boxes given as corners, or as (x, y, width, height) with ``center``."""
    if center:
        return box_iou(a0 - a2 * 0.5, a1 - a3 * 0.5, a0 + a2 * 0.5, a1 + a3 * 0.5,
                       b0 - b2 * 0.5, b1 - b3 * 0.5, b0 + b2 * 0.5, b1 + b3 * 0.5)
    return box_iou(a0, a1, a2, a3, b0, b1, b2, b3)


def nms_candidates(data, score, rows, b, n, score_index, id_index, background_id, valid_thresh):
    """box_nms for batch ``b``: the rows whose score exceeds ``valid_thresh`` (and whose class is
    not ``background_id``), in order, into ``rows[b]`` with their scores in ``score[b, :, 0]``;
    returns how many."""
    count = 0
    for i in range(n):
        if data[b, i, score_index] <= valid_thresh:
            continue
        if id_index >= 0 and data[b, i, id_index] == background_id:   # -1 (the default) too
            continue
        rows[b, count, 0] = i
        score[b, count, 0] = data[b, i, score_index]
        count += 1
    return count


def nms_write(data, rows, order, dropped, out, record, b, n, width, count, keep, coord, id_index,
              force_suppress, overlap, in_center, out_center):
    """Suppress among the ``keep`` best candidates (by ``order``) and write batch ``b``'s kept
    rows best first (coordinates converted to the output format), the rest of ``out[b]`` -1;
    ``record[b, q]`` is the input row of output row q (-1 for none)."""
    for q in range(n):
        record[b, q] = -1.0
        for c in range(width):
            out[b, q, c] = -1.0
    for q in range(keep):
        dropped[b, q, 0] = 0
    for q in range(keep):
        if dropped[b, q, 0]:
            continue
        i = rows[b, order[b, q, 0], 0]
        for r in range(q + 1, keep):
            if dropped[b, r, 0]:
                continue
            j = rows[b, order[b, r, 0], 0]
            if id_index >= 0 and not force_suppress and data[b, i, id_index] != data[b, j, id_index]:
                continue
            if corner_iou(data[b, i, coord], data[b, i, coord + 1], data[b, i, coord + 2],
                          data[b, i, coord + 3], data[b, j, coord], data[b, j, coord + 1],
                          data[b, j, coord + 2], data[b, j, coord + 3], in_center) > overlap:
                dropped[b, r, 0] = 1
    kept = 0
    for q in range(keep):
        if dropped[b, q, 0]:
            continue
        i = rows[b, order[b, q, 0], 0]
        for c in range(width):
            out[b, kept, c] = data[b, i, c]
        x0 = data[b, i, coord]
        y0 = data[b, i, coord + 1]
        x1 = data[b, i, coord + 2]
        y1 = data[b, i, coord + 3]
        if in_center and not out_center:
            out[b, kept, coord] = x0 - x1 * 0.5
            out[b, kept, coord + 1] = y0 - y1 * 0.5
            out[b, kept, coord + 2] = x0 + x1 * 0.5
            out[b, kept, coord + 3] = y0 + y1 * 0.5
        elif out_center and not in_center:
            out[b, kept, coord] = (x0 + x1) * 0.5
            out[b, kept, coord + 1] = (y0 + y1) * 0.5
            out[b, kept, coord + 2] = x1 - x0
            out[b, kept, coord + 3] = y1 - y0
        record[b, kept] = i
        kept += 1


def nms_backward(g, record, dx, b, n, width):
    """``dx[b]``: each kept output row's gradient back at its input row, 0 elsewhere."""
    for q in range(n):
        for c in range(width):
            dx[b, q, c] = 0.0
    for q in range(n):
        i = int(record[b, q])
        if i >= 0:
            for c in range(width):
                dx[b, i, c] = g[b, q, c]


def encode_boxes(samples, matches, anchors, refs, means, stds, out, mask, b, n, m):
    """box_encode for batch ``b``: each positive sample's (anchor, matched reference) offsets
    normalised by ``means``/``stds``, mask 1; 0 elsewhere. A match outside [0, m) encodes nothing."""
    for i in range(n):
        j = int(matches[b, i])
        for c in range(4):
            out[b, i, c] = 0.0
            mask[b, i, c] = 0.0
        if samples[b, i] > 0.5 and j >= 0 and j < m:
            aw = anchors[b, i, 2] - anchors[b, i, 0]
            ah = anchors[b, i, 3] - anchors[b, i, 1]
            rw = refs[b, j, 2] - refs[b, j, 0]
            rh = refs[b, j, 3] - refs[b, j, 1]
            dx = (refs[b, j, 0] + rw * 0.5) - (anchors[b, i, 0] + aw * 0.5)
            dy = (refs[b, j, 1] + rh * 0.5) - (anchors[b, i, 1] + ah * 0.5)
            out[b, i, 0] = (dx / aw - means[0]) / stds[0]
            out[b, i, 1] = (dy / ah - means[1]) / stds[1]
            out[b, i, 2] = (math.log(rw / aw) - means[2]) / stds[2]
            out[b, i, 3] = (math.log(rh / ah) - means[3]) / stds[3]
            for c in range(4):
                mask[b, i, c] = 1.0


def greedy_match(scores, order, x, y, b, n, m, threshold, ascend, topk):
    """bipartite_matching for batch ``b``: pairs taken best score first (``order``), each row and
    column once, until a score is below ``threshold`` (above it with ``ascend``), at most ``topk``
    pairs (all when <= 0; MXNet 1.9.1's CPU build takes one more than documented)."""
    for i in range(n):
        x[b, i] = -1.0
    for j in range(m):
        y[b, j] = -1.0
    count = 0
    for q in range(n * m):
        if topk > 0 and count >= topk:
            break
        k = order[b, q, 0]
        s = scores[b, k, 0]
        if (s > threshold) if ascend else (s < threshold):
            break
        i = k // m
        j = k % m
        if x[b, i] < 0.0 and y[b, j] < 0.0:
            x[b, i] = j
            y[b, j] = i
            count += 1


def proposal_boxes(cls_prob, bbox, info, anchors, props, scores, n, height, width, na, stride, min_size):
    """Region proposals of image ``n``: each anchor (shifted to each feature-map cell, order
    (row, column, anchor)) decoded by its deltas, clipped to the image (``info[n]`` = height,
    width, scale); boxes narrower or lower than ``min_size * scale`` get score -1."""
    imh = info[n, 0]
    imw = info[n, 1]
    limit = min_size * info[n, 2]
    i = 0
    for y in range(height):
        for x in range(width):
            for a in range(na):
                x0 = anchors[n, a, 0] + x * stride
                y0 = anchors[n, a, 1] + y * stride
                aw = anchors[n, a, 2] - anchors[n, a, 0] + 1.0
                ah = anchors[n, a, 3] - anchors[n, a, 1] + 1.0
                cx = bbox[n, 4 * a, y, x] * aw + x0 + 0.5 * (aw - 1.0)
                cy = bbox[n, 4 * a + 1, y, x] * ah + y0 + 0.5 * (ah - 1.0)
                pw = math.exp(bbox[n, 4 * a + 2, y, x]) * aw
                ph = math.exp(bbox[n, 4 * a + 3, y, x]) * ah
                b0 = min(max(cx - 0.5 * (pw - 1.0), 0.0), imw - 1.0)
                b1 = min(max(cy - 0.5 * (ph - 1.0), 0.0), imh - 1.0)
                b2 = min(max(cx + 0.5 * (pw - 1.0), 0.0), imw - 1.0)
                b3 = min(max(cy + 0.5 * (ph - 1.0), 0.0), imh - 1.0)
                props[n, i, 0] = b0
                props[n, i, 1] = b1
                props[n, i, 2] = b2
                props[n, i, 3] = b3
                s = cls_prob[n, na + a, y, x]
                if b2 - b0 + 1.0 < limit or b3 - b1 + 1.0 < limit:
                    s = -1.0
                scores[n, i, 0] = s
                i += 1


@jitable
def _pixel_iou(a0, a1, a2, a3, b0, b1, b2, b3):
    """IoU of boxes in pixel coordinates (inclusive corners: sizes + 1)."""
    iw = min(a2, b2) - max(a0, b0) + 1.0
    ih = min(a3, b3) - max(a1, b1) + 1.0
    if iw <= 0.0 or ih <= 0.0:
        return 0.0
    inter = iw * ih
    return inter / ((a2 - a0 + 1.0) * (a3 - a1 + 1.0) + (b2 - b0 + 1.0) * (b3 - b1 + 1.0) - inter)


def proposal_select(props, scores, order, dropped, keep, rois, roi_scores, n, total, pre, post, threshold):
    """Non-maximum suppression among image ``n``'s ``pre`` best proposals (``order``), keeping at
    most ``post``, written as rows ``n * post ...`` of ``rois`` (batch index, box) and
    ``roi_scores``; fewer kept proposals repeat cyclically to fill ``post`` rows, as MXNet does."""
    cand = min(pre, total)
    for q in range(cand):
        dropped[n, q, 0] = 0
    kept = 0
    for q in range(cand):
        if kept >= post:
            break
        if dropped[n, q, 0]:
            continue
        i = order[n, q, 0]
        keep[n, kept, 0] = i
        kept += 1
        for r in range(q + 1, cand):
            if dropped[n, r, 0]:
                continue
            j = order[n, r, 0]
            if _pixel_iou(props[n, i, 0], props[n, i, 1], props[n, i, 2], props[n, i, 3],
                          props[n, j, 0], props[n, j, 1], props[n, j, 2], props[n, j, 3]) > threshold:
                dropped[n, r, 0] = 1
    for q in range(post):
        row = n * post + q
        i = keep[n, q % kept, 0] if kept > 0 else 0
        rois[row, 0] = n
        for c in range(4):
            rois[row, c + 1] = props[n, i, c] if kept > 0 else 0.0
        roi_scores[row, 0] = scores[n, i, 0] if kept > 0 else -1.0
