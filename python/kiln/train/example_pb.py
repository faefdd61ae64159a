"""tf.train.Example and its messages (Feature, Features, BytesList, FloatList,
Int64List, FeatureList, FeatureLists, SequenceExample) as real protobuf classes:
the descriptors of TensorFlow's example.proto / feature.proto (package
"tensorflow", the published field numbers) built in code into a private pool, so
no generated code has to match the installed protobuf runtime and a process that
imports TensorFlow too sees no clash. Needs the `protobuf` package (as
TensorFlow does); kiln.train builds the classes on first use."""
try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError as e:  # kiln itself does not need protobuf
    descriptor_pb2 = None
    _MISSING = str(e)

NAMES = ["BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList",
         "FeatureLists", "Example", "SequenceExample"]


def _fd():
    return descriptor_pb2.FieldDescriptorProto


def _field(msg, name, number, ftype, label=None, type_name=None, oneof=None, packed=None):
    f = msg.field.add(name=name, number=number, type=ftype,
                      label=label or _fd().LABEL_OPTIONAL)
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof
    if packed is not None:
        f.options.packed = packed
    return f


def _map(msg, field, number, value_type):
    """map<string, value_type> field: a nested map-entry message."""
    _F = _fd()  # noqa: N806 -- protobuf's class
    entry = msg.nested_type.add(name="".join(p.capitalize() for p in field.split("_")) + "Entry")
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    _field(msg, field, number, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           f".tensorflow.{msg.name}.{entry.name}")


def _file():
    _F = _fd()  # noqa: N806 -- protobuf's class
    fd = descriptor_pb2.FileDescriptorProto(name="kiln/tensorflow/example.proto",
                                            package="tensorflow", syntax="proto3")
    rep = _F.LABEL_REPEATED
    _field(fd.message_type.add(name="BytesList"), "value", 1, _F.TYPE_BYTES, rep)
    _field(fd.message_type.add(name="FloatList"), "value", 1, _F.TYPE_FLOAT, rep, packed=True)
    _field(fd.message_type.add(name="Int64List"), "value", 1, _F.TYPE_INT64, rep, packed=True)
    feature = fd.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, kind in enumerate(["bytes_list", "float_list", "int64_list"], 1):
        type_name = ".tensorflow." + ["BytesList", "FloatList", "Int64List"][number - 1]
        _field(feature, kind, number, _F.TYPE_MESSAGE, type_name=type_name, oneof=0)
    _map(fd.message_type.add(name="Features"), "feature", 1, ".tensorflow.Feature")
    _field(fd.message_type.add(name="FeatureList"), "feature", 1, _F.TYPE_MESSAGE, rep,
           ".tensorflow.Feature")
    _map(fd.message_type.add(name="FeatureLists"), "feature_list", 1, ".tensorflow.FeatureList")
    _field(fd.message_type.add(name="Example"), "features", 1, _F.TYPE_MESSAGE,
           type_name=".tensorflow.Features")
    seq = fd.message_type.add(name="SequenceExample")
    _field(seq, "context", 1, _F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    _field(seq, "feature_lists", 2, _F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")
    return fd


_classes = {}


def classes():
    """{name: message class}, built on the first call; ImportError without protobuf."""
    if descriptor_pb2 is None:
        raise ImportError(f"tf.train.Example needs the protobuf package (pip install "
                          f"protobuf): {_MISSING}")
    if not _classes:
        pool = descriptor_pool.DescriptorPool()
        pool.Add(_file())
        _classes.update({n: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"tensorflow.{n}")) for n in NAMES})
    return _classes
