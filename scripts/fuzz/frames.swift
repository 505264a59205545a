// libFuzzer target for `FrameParser` (Sources/WebSocketTransport/Service/FrameParser.swift), built by
// scripts/fuzz.py with the parser's own source files. The first byte of an input picks the role (masked frames or
// not), whether data frames are being skipped (a closing connection), and the size of the reads the rest arrives
// in. The parser must not trap; it must return the same outputs whether the bytes come at once or in those reads;
// no control frame may break RFC 6455 §5.5 and no data frame may take a message past the limit.

let limit = 4_096

func parse(_ bytes: UnsafeRawBufferPointer, masked: Bool, skipsData: Bool, read: Int) -> [FrameParser.Output] {
    var parser = FrameParser(readsMaskedFrames: masked)
    parser.skipsData = skipsData
    var outputs: [FrameParser.Output] = []
    var assembled = 0
    var offset = 0
    while offset < bytes.count {
        let size = min(read, bytes.count - offset)
        parser.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]))
        offset += size
        while let output = parser.next(assembled: assembled, limit: limit) {
            outputs.append(output)
            guard case .frame(let frame) = output else { return outputs }
            if frame.opcode.isControl {
                check(frame.fin && frame.payload.count <= 125, "a control frame breaks RFC 6455 §5.5")
            } else {
                check(!skipsData, "a data frame came out while data was skipped")
                check(assembled + frame.payload.count <= limit, "a message went past the limit")
                assembled = frame.fin ? 0 : assembled + frame.payload.count
            }
        }
    }
    return outputs
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let control = data[0]
    let bytes = UnsafeRawBufferPointer(start: data + 1, count: count - 1)
    let (masked, skipsData) = (control & 1 != 0, control & 2 != 0)
    let whole = parse(bytes, masked: masked, skipsData: skipsData, read: max(1, bytes.count))
    let pieces = parse(bytes, masked: masked, skipsData: skipsData, read: Int(control >> 2) + 1)
    check(whole == pieces, "the outputs depend on how the bytes were read")
    return 0
}
