"""kiln.train (tf.train): checkpoints of variables and the objects holding them.

    ckpt = kiln.train.Checkpoint(step=kiln.Variable(1), optimizer=opt, net=net)
    manager = kiln.train.CheckpointManager(ckpt, "./ckpts", max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)
    ...
    manager.save()

The file format is kiln's own (docs/PYTHON.md, "Checkpoints and Keras saving").
"""
from kiln.train.checkpoint import Checkpoint, CheckpointOptions, ListWrapper, DictWrapper
from kiln.train.management import (CheckpointManager, CheckpointState, get_checkpoint_state,
                                   latest_checkpoint, checkpoint_exists,
                                   update_checkpoint_state)
from kiln.train import example_pb
from kiln.train.reader import CheckpointReader, list_variables, load_checkpoint, load_variable

__all__ = ["Checkpoint", "CheckpointOptions", "CheckpointManager", "CheckpointState",
           "CheckpointReader", "get_checkpoint_state", "latest_checkpoint",
           "checkpoint_exists", "update_checkpoint_state", "list_variables", "load_checkpoint",
           "load_variable", "Example", "SequenceExample", "Features", "Feature", "FeatureList",
           "FeatureLists", "BytesList", "FloatList", "Int64List"]



def __getattr__(name):
    """tf.train.Example and its messages, built on first use (they need protobuf)."""
    if name not in example_pb.NAMES:
        raise AttributeError(f"module 'kiln.train' has no attribute {name!r}")
    globals().update(example_pb.classes())
    return globals()[name]
