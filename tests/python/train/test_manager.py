"""kiln.train.CheckpointManager, the `checkpoint` state file and latest_checkpoint."""
import os
import time

import numpy as np
import pytest

import kiln as tf


def files(directory):
    return sorted(os.listdir(directory))


def test_keeps_the_newest_and_deletes_the_rest(tmp_path):
    d = str(tmp_path)
    ckpt = tf.train.Checkpoint(v=tf.Variable(0))
    manager = tf.train.CheckpointManager(ckpt, d, max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    assert manager.directory == d
    paths = []
    for i in range(4):
        ckpt.v.assign(i)
        paths.append(manager.save())
    assert paths == [os.path.join(d, f"ckpt-{i}") for i in range(1, 5)]
    assert manager.checkpoints == paths[2:] and manager.latest_checkpoint == paths[3]
    assert files(d) == ["checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
                        "ckpt-4.data-00000-of-00001", "ckpt-4.index"]
    assert tf.train.latest_checkpoint(d) == paths[3]
    state = tf.train.get_checkpoint_state(d)
    assert state.all_model_checkpoint_paths == paths[2:]
    assert len(state.all_model_checkpoint_timestamps) == 2
    text = open(os.path.join(d, "checkpoint")).read()
    assert 'model_checkpoint_path: "ckpt-4"' in text  # relative, as TensorFlow writes


def test_a_new_manager_recovers_the_state(tmp_path):
    d = str(tmp_path)
    ckpt = tf.train.Checkpoint(v=tf.Variable(5))
    manager = tf.train.CheckpointManager(ckpt, d, max_to_keep=3, checkpoint_name="model")
    for _ in range(3):
        manager.save()
    other = tf.train.Checkpoint(v=tf.Variable(0))
    again = tf.train.CheckpointManager(other, d, max_to_keep=3, checkpoint_name="model")
    assert again.checkpoints == manager.checkpoints
    assert again.restore_or_initialize() == os.path.join(d, "model-3")
    assert int(other.v.numpy()) == 5 and int(other.save_counter.numpy()) == 3
    assert again.save() == os.path.join(d, "model-4")
    assert files(d)[0] == "checkpoint" and "model-1.index" not in files(d)


def test_checkpoint_number_and_init_fn(tmp_path):
    step = tf.Variable(100, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(step=step)
    called = []
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=None,
                                         init_fn=lambda: called.append(1))
    assert manager.restore_or_initialize() is None and called == [1]
    assert manager.save(checkpoint_number=step).endswith("ckpt-100")
    assert manager.save(checkpoint_number=7).endswith("ckpt-7")
    for i in range(3):
        manager.save()
    assert len(manager.checkpoints) == 5  # max_to_keep=None keeps everything


def test_checkpoint_interval(tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path),
                                         max_to_keep=5, step_counter=step,
                                         checkpoint_interval=10)
    assert manager.save() is not None
    step.assign(5)
    assert manager.save() is None
    assert manager.save(check_interval=False) is not None
    step.assign(15)
    assert manager.save() is not None and manager.checkpoint_interval == 10


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1)), str(tmp_path),
                                         max_to_keep=1, keep_checkpoint_every_n_hours=1)
    first = manager.save()
    clock[0] += 2 * 3600
    kept = manager.save()
    clock[0] += 60
    manager.save()
    # Swept checkpoints are kept when an hour newer than the last one kept (TensorFlow's rule).
    assert not os.path.exists(first + ".index") and os.path.exists(kept + ".index")
    assert manager.checkpoints == [os.path.join(str(tmp_path), "ckpt-3")]


def test_argument_checks(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1))
    with pytest.raises(ValueError, match="positive integer"):
        tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=0)
    with pytest.raises(ValueError, match="step_counter"):
        tf.train.CheckpointManager(ckpt, str(tmp_path), 2, checkpoint_interval=3)


def test_latest_checkpoint_without_state_or_files(tmp_path):
    assert tf.train.latest_checkpoint(str(tmp_path / "missing")) is None
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    prefix = tf.train.Checkpoint(v=tf.Variable(1)).save(str(tmp_path / "c"))
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix
    os.remove(prefix + ".index")
    assert tf.train.latest_checkpoint(str(tmp_path)) is None  # the files are gone


@pytest.mark.parametrize("text", ["garbage here", 'model_checkpoint_path: 3',
                                  'model_checkpoint_path: "a\\q"', 'unknown_field: "x"',
                                  b"\xff\xfe".decode("latin-1"), "last_preserved_timestamp: 1"])
def test_unreadable_state_file_is_ignored_with_a_warning(tmp_path, text):
    with open(tmp_path / "checkpoint", "w", encoding="latin-1") as f:
        f.write(text)
    with pytest.warns(UserWarning, match="checkpoint state ignored"):
        assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_state_file_paths_with_odd_characters(tmp_path):
    d = tmp_path / 'dir "quoted" \\ é'
    v = tf.Variable(np.float32(2.5))
    prefix = tf.train.Checkpoint(v=v).save(str(d / "ckpt"))
    assert tf.train.latest_checkpoint(str(d)) == prefix
    state = tf.train.get_checkpoint_state(str(d))
    assert state.all_model_checkpoint_paths == [prefix]
