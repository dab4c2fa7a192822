"""Compile message specs into specialised encoders and decoders.

For every (message, version) kclient writes the Python source of one decode
and one encode function per struct — consecutive fixed-width fields packed
with a single :class:`struct.Struct`, lengths checked against the remaining
bytes before anything is allocated — runs it once and caches the result.
Decoded values are instances of a generated :class:`Message` subclass per
struct with snake_case attributes.

This module gathers the public names; the work is split by concern:

* :mod:`kclient.protocol.varint` — unsigned varints;
* :mod:`kclient.protocol.message` — :class:`Message`, ``to_dict``/``from_value``;
* :mod:`kclient.protocol.classgen` — one :class:`Message` subclass per struct;
* :mod:`kclient.protocol.emitter` — writes the decoder/encoder source;
* :mod:`kclient.protocol.compiled` — :class:`CompiledMessage`, which runs it;
* :mod:`kclient.protocol.generated` — the registry of generated scripts.

Debugging generated code
------------------------
Each script is compiled under its own filename, ``<kclient generated WHAT #N>``
(``decode/encode MetadataResponse v12``, ``MetadataResponse.Topic.__init__``,
``MetadataResponse.from_value``), and registered in :mod:`linecache`, so
tracebacks and ``pdb`` show the generated lines.  ``kclient decode
--show-codec MESSAGE VERSION`` prints a message's source, as does
``CompiledMessage.source``.  The key to the names in it:

``_dec_<Struct>(buf, pos, end_buf)`` / ``_enc_<Struct>(o, out)``
    decode struct ``<Struct>`` from ``buf`` at ``pos`` (returns ``(obj, pos)``)
    / append the encoding of ``o`` to the bytearray ``out``.
``pos``, ``len_pos``, ``tag_pos<k>``
    the read position; where the current length (tag) started — the offsets
    decode errors report.
``n``, ``v<k>``, ``t<k>``, ``tb<k>``, ``item<k>``, ``append<k>``, ``done<k>``
    a length or count; a decoded field value; a tagged field value; a
    tag-count byte read along with fixed fields; an array element; the
    ``append`` of a list being filled; the flag of the fixed-struct fast path.
``ntags<k>``, ``tag<k>``, ``size<k>``, ``unknown<k>``, ``seen<k>``
    the tagged-field section: count, tag number, size, unknown tags kept for
    re-encoding, known tags that were on the wire.
``_U<k>`` / ``_P<k>`` / ``_IU<k>``
    ``struct.Struct(...).unpack_from`` / ``.pack`` / ``.iter_unpack`` of a
    run of fixed-width fields (the format is in the emitter, one per run).
``_AU<k>`` / ``_AP<k>``
    tables of unpackers / packers of ``n`` fixed-width array elements.
``_A_<Struct>``, ``_Cls_<Struct>``, ``_C<k>``, ``_D<k>``, ``_K<k>``
    blank-instance allocator and class of ``<Struct>``; a child struct class;
    a field default; another constant.
``_MISSING``, ``_ruv``/``_wuv``, ``_Trunc``/``_BadLen``/``_BadTags``/``_ProtoErr``
    the "not given" marker; read/write an unsigned varint; the error classes.
"""

from __future__ import annotations

from kclient.protocol.classgen import message_classes
from kclient.protocol.compiled import CompiledMessage, compile_message
from kclient.protocol.message import UNKNOWN_TAGS_KEY, Message
from kclient.protocol.varint import read_uvarint, write_uvarint

__all__ = [
    "UNKNOWN_TAGS_KEY",
    "CompiledMessage",
    "Message",
    "compile_message",
    "message_classes",
    "read_uvarint",
    "write_uvarint",
]
