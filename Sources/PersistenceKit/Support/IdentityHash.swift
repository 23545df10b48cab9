/// A fast hash for values whose identity is already one machine word (an object's address,
/// an object ID's hash code), for use in `Hashable._rawHashValue(seed:)`.
///
/// `Set` and `Dictionary` hash each element through `_rawHashValue(seed:)`, whose default
/// runs SipHash over what `hash(into:)` feeds it: about 100 instructions per element. A
/// save of 100,000 inserted objects builds several sets of objects and IDs (Core Data's
/// notification payloads), and that hashing was a twentieth of the save (measured with
/// callgrind). Identity hashes need no protection against chosen-collision input, so one
/// multiply-xorshift mix (the finalizer of MurmurHash3) is enough; it spreads the aligned,
/// low-entropy bits of an address over the low bits that the tables index by.
@inline(__always)
func identityHash(_ word: UInt, seed: Int) -> Int {
    var x = UInt64(word) ^ UInt64(UInt(bitPattern: seed))
    x ^= x >> 33
    x &*= 0xFF51_AFD7_ED55_8CCD
    x ^= x >> 33
    x &*= 0xC4CE_B9FE_1A85_EC53
    x ^= x >> 33
    return Int(truncatingIfNeeded: x)
}
