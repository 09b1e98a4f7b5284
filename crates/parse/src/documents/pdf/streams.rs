//! A PDF's compressed streams, decoded once and within bounds.
//!
//! lopdf inflates a stream (FlateDecode, LZWDecode) whole and without a limit, and pdf-extract
//! asks it again each time a page or a form is drawn: a 1 MiB stream of deflated zeros became
//! 1 GiB in memory. So:
//! - before lopdf parses the file, [`measure_raw`] runs a counting (never storing) inflate and
//!   LZW decode from every `stream` keyword of the raw bytes and refuses the file when one
//!   would pass [`RAW_STREAM_BYTE_LIMIT`]: this bounds the streams lopdf decodes while it reads
//!   the file (cross-reference streams), before any object reaches Souz;
//! - while lopdf loads each object, [`load_filter`] decodes every stream other than an image
//!   (which nothing here reads) through its leading FlateDecode, LZWDecode and ASCII85Decode
//!   filters, with lopdf's PNG predictors, keeping at most [`STREAM_BYTE_LIMIT`] a stream and
//!   [`DOCUMENT_STREAM_BYTE_LIMIT`] for the file, and stores the plain bytes without those
//!   filters. Object streams are decoded this way before lopdf parses them; pages and forms
//!   are never inflated again. A stream past a bound becomes a marker, and the file is refused
//!   with [`DocumentError::TooLarge`]. Encrypted files skip the load filter, so
//!   [`decode_streams`] does the same after decryption.
//!
//! The raw pass also measures nested FlateDecode layers (up to eight; more is refused), which
//! bounds a cross-reference stream behind several filters, and refuses an encrypted file's
//! object stream too large to be safe unmeasured (its bytes are encrypted in the raw file, and
//! lopdf decrypts and inflates it before any filter sees it).

use std::cell::RefCell;
use std::io::Read;

use flate2::read::{DeflateDecoder, ZlibDecoder};
use pdf_extract::{Dictionary, Document, Object, ObjectId};

use crate::documents::DocumentError;

/// Largest decoded stream kept (a page's content, a form, a font).
pub const STREAM_BYTE_LIMIT: u64 = 64 << 20;
/// Largest total of decoded streams kept for one file.
pub const DOCUMENT_STREAM_BYTE_LIMIT: u64 = 256 << 20;
/// Largest any stream of the raw file may inflate to (images included, which are only counted).
pub const RAW_STREAM_BYTE_LIMIT: u64 = 256 << 20;

/// Key of the marker that replaces a stream past a bound during loading.
const REFUSED_KEY: &[u8] = b"SouzStreamRefused";

/// A decoding filter lopdf applies itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Flate,
    Lzw,
    Ascii85,
}

impl Filter {
    fn named(name: &[u8]) -> Option<Self> {
        match name {
            b"FlateDecode" => Some(Self::Flate),
            b"LZWDecode" => Some(Self::Lzw),
            b"ASCII85Decode" => Some(Self::Ascii85),
            _ => None,
        }
    }
}

/// Decoded bytes, kept or only counted, refused past a limit.
struct Output {
    kept: Option<Vec<u8>>,
    len: u64,
    limit: u64,
}

/// A stream decoded past its limit.
struct Exceeded;

impl Output {
    fn new(limit: u64, keep: bool) -> Self {
        Self {
            kept: keep.then(Vec::new),
            len: 0,
            limit,
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), Exceeded> {
        self.len += bytes.len() as u64;
        if self.len > self.limit {
            return Err(Exceeded);
        }
        if let Some(kept) = &mut self.kept {
            kept.extend_from_slice(bytes);
        }
        Ok(())
    }
}

const CHUNK: usize = 64 << 10;

/// Inflates as lopdf does: zlib, and when that yields nothing, raw deflate after the 2-byte
/// header; a broken stream keeps what came out before the break.
fn inflate(input: &[u8], output: &mut Output) -> Result<(), Exceeded> {
    fn drain(mut reader: impl Read, output: &mut Output) -> Result<(), Exceeded> {
        let mut buffer = vec![0u8; CHUNK];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => return Ok(()),
                Ok(read) => output.push(&buffer[..read])?,
            }
        }
    }
    if input.is_empty() {
        return Ok(());
    }
    drain(ZlibDecoder::new(input), output)?;
    if output.len == 0 && input.len() > 2 {
        drain(DeflateDecoder::new(&input[2..]), output)?;
    }
    Ok(())
}

/// Decodes LZW (MSB first, codes from 9 bits) as lopdf does, up to the end code or an error.
fn lzw(input: &[u8], early_change: bool, output: &mut Output) -> Result<(), Exceeded> {
    use weezl::{BitOrder, LzwStatus, decode::Decoder};
    let mut decoder = if early_change {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    } else {
        Decoder::new(BitOrder::Msb, 8)
    };
    let mut buffer = vec![0u8; CHUNK];
    let mut position = 0;
    loop {
        let result = decoder.decode_bytes(&input[position..], &mut buffer);
        position += result.consumed_in;
        output.push(&buffer[..result.consumed_out])?;
        match result.status {
            Ok(LzwStatus::Ok) if result.consumed_in > 0 || result.consumed_out > 0 => {}
            _ => return Ok(()),
        }
    }
}

/// Where stream data starts after each `stream` keyword (then blanks and one end of line).
fn stream_starts(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    const KEYWORD: &[u8] = b"stream";
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let found = bytes[from..]
                .windows(KEYWORD.len())
                .position(|window| window == KEYWORD)?;
            let keyword = from + found;
            from = keyword + KEYWORD.len();
            if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
                continue;
            }
            let mut start = from;
            while matches!(bytes.get(start), Some(b' ' | b'\t')) {
                start += 1;
            }
            match (bytes.get(start), bytes.get(start + 1)) {
                (Some(b'\r'), Some(b'\n')) => return Some(start + 2),
                (Some(b'\r' | b'\n'), _) => return Some(start + 1),
                _ => continue,
            }
        }
    })
}

/// Refuses a file one of whose raw streams would inflate (or LZW-decode) past
/// [`RAW_STREAM_BYTE_LIMIT`], at any of up to [`MAX_FLATE_LAYERS`] nested FlateDecode layers
/// (lopdf applies every filter of a cross-reference stream's array), or that is encrypted and
/// holds an object stream larger than [`ENCRYPTED_OBJECT_STREAM_LIMIT`] (lopdf decrypts and
/// inflates those itself, where no filter reaches them; deflate expands at most about 1,032
/// times, so a smaller one stays within the bound). Counts only: nothing decoded is kept.
pub fn measure_raw(bytes: &[u8]) -> Result<(), DocumentError> {
    let encrypted = contains(bytes, b"/Encrypt");
    // Each dictionary is looked for only after the previous stream's data starts, so the
    // backward scans together read the file at most once (many `stream` keywords close
    // together would otherwise rescan the same 64 KiB each).
    let mut floor = 0;
    for start in stream_starts(bytes) {
        let (before, from) = (
            &bytes[..start],
            floor.max(start.saturating_sub(DICTIONARY_SCAN)),
        );
        floor = start;
        let data = &bytes[start..];
        // FlateDecode (every nested layer) is measured by `nested_layers_within`.
        let within = lzw(data, true, &mut Output::new(RAW_STREAM_BYTE_LIMIT, false)).is_ok()
            && lzw(data, false, &mut Output::new(RAW_STREAM_BYTE_LIMIT, false)).is_ok();
        if !within {
            return Err(too_large(&format!(
                "a compressed stream expands past {} MiB",
                RAW_STREAM_BYTE_LIMIT >> 20
            )));
        }
        nested_layers_within(data, stream_dictionary(&before[from..]))?;
        if encrypted && is_object_stream(&before[from..]) {
            // Looked for only a little past the bound, so the scan stays linear.
            let window = (ENCRYPTED_OBJECT_STREAM_LIMIT as usize + 16).min(data.len());
            let length = find(&data[..window], b"endstream").unwrap_or(data.len()) as u64;
            if length > ENCRYPTED_OBJECT_STREAM_LIMIT {
                return Err(too_large(&format!(
                    "encrypted object stream of {} KiB could expand past {} MiB before it can \
                     be measured",
                    length >> 10,
                    RAW_STREAM_BYTE_LIMIT >> 20
                )));
            }
        }
    }
    Ok(())
}

/// Nested FlateDecode layers measured in the raw pass.
const MAX_FLATE_LAYERS: usize = 8;
/// Largest object stream of an encrypted file: inflated at most about 1,032 times, it stays
/// within [`RAW_STREAM_BYTE_LIMIT`].
const ENCRYPTED_OBJECT_STREAM_LIMIT: u64 = RAW_STREAM_BYTE_LIMIT / 1032;

/// One FlateDecode layer as lopdf decodes it: zlib, or (when zlib yields nothing) raw deflate
/// after the 2-byte header.
#[derive(Debug, Clone, Copy)]
enum Layer {
    Zlib,
    Raw,
}

/// `data` read through `layers`, outermost first, streaming.
fn through<'a>(data: &'a [u8], layers: &[Layer]) -> Box<dyn Read + 'a> {
    let mut reader: Box<dyn Read + 'a> = Box::new(data);
    for layer in layers {
        reader = match layer {
            Layer::Zlib => Box::new(ZlibDecoder::new(reader)),
            Layer::Raw => {
                let mut header = [0u8; 2];
                // A layer shorter than its header yields nothing, as in lopdf.
                let _ = reader.read_exact(&mut header);
                Box::new(DeflateDecoder::new(reader))
            }
        };
    }
    reader
}

/// How many bytes `reader` yields and whether it ended cleanly (not on an error), or
/// `Exceeded` past [`RAW_STREAM_BYTE_LIMIT`].
fn counted(mut reader: impl Read) -> Result<(u64, bool), Exceeded> {
    let mut output = Output::new(RAW_STREAM_BYTE_LIMIT, false);
    let mut buffer = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok((output.len, true)),
            Err(_) => return Ok((output.len, false)),
            Ok(read) => output.push(&buffer[..read])?,
        }
    }
}

/// Follows the FlateDecode layers of the stream whose data starts at `start`, as lopdf decodes
/// them (zlib, else raw deflate after the header; a broken layer keeps what it yielded),
/// streaming and keeping nothing, and refuses a layer past the bound. As many layers as its
/// dictionary lists (more than [`MAX_FLATE_LAYERS`] is refused); where no dictionary is found
/// near the data, up to that many while each yields something.
fn nested_layers_within(data: &[u8], dictionary: Option<&[u8]>) -> Result<(), DocumentError> {
    let listed = dictionary.map(flate_filters);
    if listed.is_some_and(|listed| listed > MAX_FLATE_LAYERS) {
        return Err(too_large(&format!(
            "a stream is compressed more than {MAX_FLATE_LAYERS} times"
        )));
    }
    let mut layers = Vec::new();
    for depth in 1..=listed.unwrap_or(MAX_FLATE_LAYERS).max(1) {
        let mut next = None;
        for layer in [Layer::Zlib, Layer::Raw] {
            layers.push(layer);
            let (yielded, _) = counted(through(data, &layers)).map_err(|Exceeded| {
                too_large(&format!(
                    "a stream compressed {depth} times expands past {} MiB",
                    RAW_STREAM_BYTE_LIMIT >> 20
                ))
            })?;
            layers.pop();
            if yielded > 0 {
                next = Some(layer);
                break;
            }
        }
        match next {
            Some(layer) => layers.push(layer),
            None => return Ok(()),
        }
    }
    Ok(())
}

/// How many FlateDecode filters a stream dictionary's text lists (`/FlateDecode` or `/Fl`).
fn flate_filters(dictionary: &[u8]) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = find(&dictionary[from..], b"/Fl") {
        let after = from + at + 3;
        let rest = &dictionary[after..];
        if rest.starts_with(b"ateDecode") || !rest.first().is_some_and(u8::is_ascii_alphanumeric) {
            count += 1;
        }
        from = after;
    }
    count
}

/// The dictionary text at the end of `window` (the bytes before a stream's data, at most
/// [`DICTIONARY_SCAN`] of them), back to its `obj` keyword, when the keyword is there.
fn stream_dictionary(window: &[u8]) -> Option<&[u8]> {
    rfind(window, b"obj").map(|from| &window[from..])
}

/// Whether the dictionary at the end of `window` (or the whole window, when its `obj` keyword
/// is not there) names an object stream.
fn is_object_stream(window: &[u8]) -> bool {
    contains(stream_dictionary(window).unwrap_or(window), b"/ObjStm")
}

/// How far before a stream's data its dictionary is looked for (a stream's dictionary is
/// short; the bound keeps the scan linear).
const DICTIONARY_SCAN: usize = 64 << 10;

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .rposition(|window| window == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

fn too_large(reason: &str) -> DocumentError {
    DocumentError::TooLarge(format!("its {reason}"))
}

/// Decoding budget of the file being loaded.
struct Budget {
    left: u64,
}

thread_local! {
    /// The budget of the load running on this thread (lopdf loads on the calling thread; its
    /// `rayon` feature, which would not, is off). No budget: every stream is refused.
    static LOADING: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Loads `bytes` with lopdf, every non-image stream decoded within bounds as it is read.
pub fn load(bytes: &[u8]) -> Result<Document, DocumentError> {
    measure_raw(bytes)?;
    LOADING.set(Some(Budget {
        left: DOCUMENT_STREAM_BYTE_LIMIT,
    }));
    let options = pdf_extract::LoadOptions {
        filter: Some(load_filter),
        ..Default::default()
    };
    let loaded = std::panic::catch_unwind(|| Document::load_mem_with_options(bytes, options));
    let budget = LOADING.take();
    let loaded = loaded
        .map_err(|_| DocumentError::Malformed("PDF".into(), "its structure is broken".into()))?;
    let document =
        loaded.map_err(|error| DocumentError::Malformed("PDF".into(), error.to_string()))?;
    refused(&document)?;
    // Kept for `decode_streams` (encrypted files, whose objects skip the filter).
    LOADING.set(budget);
    Ok(document)
}

/// The load filter: decodes one object's stream in place. lopdf keeps the object it passed
/// (its own copy, which this changes) and ignores the returned one for objects read from the
/// file; the objects of an object stream, never streams themselves, are taken from the return.
fn load_filter(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Object::Stream(_) = object {
        LOADING.with_borrow_mut(|budget| match budget {
            Some(budget) => decode_object(object, budget),
            None => *object = marker("stream decoding had no budget"),
        });
        return Some((id, Object::Null));
    }
    Some((id, object.clone()))
}

/// Decodes the streams of an opened (decrypted) document that are still filtered, with what
/// is left of its load's budget.
pub fn decode_streams(document: &mut Document) -> Result<(), DocumentError> {
    let mut budget = LOADING.take().unwrap_or(Budget {
        left: DOCUMENT_STREAM_BYTE_LIMIT,
    });
    for object in document.objects.values_mut() {
        decode_object(object, &mut budget);
    }
    refused(document)
}

fn refused(document: &Document) -> Result<(), DocumentError> {
    for object in document.objects.values() {
        if let Ok(reason) = object
            .as_dict()
            .and_then(|dictionary| dictionary.get(REFUSED_KEY))
            .and_then(Object::as_str)
        {
            return Err(too_large(&String::from_utf8_lossy(reason)));
        }
    }
    Ok(())
}

fn marker(reason: &str) -> Object {
    let mut dictionary = Dictionary::new();
    dictionary.set(REFUSED_KEY, Object::string_literal(reason));
    Object::Dictionary(dictionary)
}

/// Decodes `object`'s leading known filters if it is a stream to be read, or replaces it with
/// a marker past a bound.
fn decode_object(object: &mut Object, budget: &mut Budget) {
    let Object::Stream(stream) = object else {
        return;
    };
    let image = stream
        .dict
        .get(b"Subtype")
        .and_then(Object::as_name)
        .is_ok_and(|subtype| subtype == b"Image")
        && !stream.dict.has_type(b"ObjStm");
    if image {
        return;
    }
    let Ok(names) = stream.filters() else {
        return;
    };
    let filters: Vec<Filter> = names.iter().map_while(|name| Filter::named(name)).collect();
    if filters.is_empty() {
        return;
    }
    let rest: Vec<Object> = names[filters.len()..]
        .iter()
        .map(|name| Object::Name(name.to_vec()))
        .collect();
    let params = stream
        .dict
        .get(b"DecodeParms")
        .and_then(Object::as_dict)
        .ok()
        .cloned();
    let limit = STREAM_BYTE_LIMIT.min(budget.left);
    let mut data = std::mem::take(&mut stream.content);
    for filter in filters {
        match decode(filter, &data, params.as_ref(), limit) {
            Ok(Some(decoded)) => data = decoded,
            // Undecodable (lopdf would fail too): read as empty.
            Ok(None) => {
                data = Vec::new();
                break;
            }
            Err(Exceeded) => {
                let reason = if limit < STREAM_BYTE_LIMIT {
                    format!(
                        "compressed streams expand past {} MiB in all",
                        DOCUMENT_STREAM_BYTE_LIMIT >> 20
                    )
                } else {
                    format!(
                        "a compressed stream expands past {} MiB",
                        STREAM_BYTE_LIMIT >> 20
                    )
                };
                *object = marker(&reason);
                return;
            }
        }
    }
    budget.left = budget.left.saturating_sub(data.len() as u64);
    if rest.is_empty() || data.is_empty() {
        stream.set_plain_content(data);
    } else {
        stream.set_content(data);
        stream.dict.set("Filter", Object::Array(rest));
    }
}

/// One filter over `input`, as lopdf decodes it; `None` when it cannot be decoded.
fn decode(
    filter: Filter,
    input: &[u8],
    params: Option<&Dictionary>,
    limit: u64,
) -> Result<Option<Vec<u8>>, Exceeded> {
    let mut output = Output::new(limit, true);
    match filter {
        Filter::Flate => inflate(input, &mut output)?,
        Filter::Lzw => {
            let early_change = params
                .and_then(|params| params.get(b"EarlyChange").ok())
                .and_then(|value| value.as_i64().ok())
                .is_none_or(|value| value != 0);
            lzw(input, early_change, &mut output)?;
        }
        Filter::Ascii85 => {
            // At most 4 bytes out per byte in (`z`); decoded by lopdf once that fits.
            let bound =
                input.iter().filter(|&&byte| byte == b'z').count() as u64 * 4 + input.len() as u64;
            if bound > limit {
                return Err(Exceeded);
            }
            let mut dictionary = Dictionary::new();
            dictionary.set("Filter", "ASCII85Decode");
            let stream = pdf_extract::Stream::new(dictionary, input.to_vec());
            return Ok(stream.decompressed_content().ok());
        }
    }
    let data = output.kept.unwrap_or_default();
    Ok(predicted(data, params))
}

/// lopdf's PNG predictors (10–15) after FlateDecode and LZWDecode; `None` when they fail.
fn predicted(data: Vec<u8>, params: Option<&Dictionary>) -> Option<Vec<u8>> {
    let Some(params) = params else {
        return Some(data);
    };
    let number = |key: &[u8], default: i64| {
        params
            .get(key)
            .and_then(Object::as_i64)
            .unwrap_or(default)
            .max(1)
    };
    let predictor = params
        .get(b"Predictor")
        .and_then(Object::as_i64)
        .unwrap_or(1);
    if !(10..=15).contains(&predictor) {
        return Some(data);
    }
    let columns = usize::try_from(number(b"Columns", 1)).ok()?;
    let colors = usize::try_from(number(b"Colors", 1)).ok()?;
    let bits = usize::try_from(number(b"BitsPerComponent", 8).max(8)).ok()?;
    let per_pixel = colors.checked_mul(bits)? / 8;
    // A row longer than the data cannot be decoded (and is not allocated).
    if per_pixel.checked_mul(columns)? > data.len() {
        return None;
    }
    pdf_extract::filters::png::decode_frame(&data, per_pixel, columns).ok()
}

#[cfg(test)]
mod tests;
