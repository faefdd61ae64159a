// Internal: the string hashes TensorFlow's hash-bucket ops use, so kiln puts
// a string in the same bucket TensorFlow does (Keras' Hashing layer, lookups
// with several OOV buckets, checked against TensorFlow's values in tests).
#pragma once
#include <cstdint>
#include <string_view>

namespace kiln::hash {

/// Google's FarmHash Fingerprint64 (farmhashna's 64-bit hash, seed 81): what
/// TensorFlow's StringToHashBucketFast and tf.fingerprint use. Stable across
/// platforms and versions (a fingerprint), unlike std::hash.
uint64_t fingerprint64(std::string_view s);

/// SipHash-2-4 of `s` with the 128-bit key (k0, k1): TensorFlow's
/// StringToHashBucketStrong.
uint64_t siphash24(std::string_view s, uint64_t k0, uint64_t k1);

}  // namespace kiln::hash
