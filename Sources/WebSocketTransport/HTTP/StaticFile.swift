/// One file to serve, with the entity tag that lets a browser revalidate it instead of fetching it again.
struct StaticFile: Sendable {
    /// Its name (or path), for the content type.
    let path: String
    let contents: [UInt8]

    /// A strong tag from the contents (FNV-1a, 64 bits): the same bytes give the same tag, in every process.
    var entityTag: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in contents {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return "\"" + String(hash, radix: 16) + "-" + String(contents.count, radix: 16) + "\""
    }
}
