// Package scatter owns the 2-D wavelet scattering transform, the fixed
// feature extractor of Tramèr & Boneh 2021 ("Differentially Private
// Learning Needs Better Features (or Much More Data)", §3), which follows
// Oyallon & Mallat 2015 ("Deep Roto-Translation Scattering for Object
// Classification") as implemented by Kymatio's Scattering2D (Andreux et al.
// 2020): Morlet wavelets ψ_{j,θ} at J scales and L angles, a Gaussian
// low-pass φ_J, and order 2,
//
//	S x = [ x⋆φ_J ,  |x⋆ψ_λ1|⋆φ_J ,  ||x⋆ψ_λ1|⋆ψ_λ2|⋆φ_J  (j2 > j1) ]
//
// each subsampled by 2^J. On a 28×28 single-channel image with J = 2 and
// L = 8 that is 1 + J·L + L²·J(J−1)/2 = 81 channels of 7×7.
//
// Privacy: the filters depend only on the image size, J and L, never on
// data, so the transform is a fixed public map applied to each example on
// its own; it costs no privacy budget and a DP learner trained on its
// output keeps its guarantee. The same holds for Normalize's per-image
// group normalisation. Normalisation by statistics of the whole dataset
// (a mean or variance per feature, as Tramèr & Boneh's "data normalisation"
// variant uses) is a function of every example and must be computed by a
// charged DP mechanism; this package does not do it.
//
// Computation follows Kymatio: the image is padded by reflection (numpy's
// "reflect": mirrored about the edge pixel, which is not repeated) to
// M' = (⌊(M+2^J)/2^J⌋+1)·2^J rows (36 for 28) and likewise columns; every
// convolution is then circular on the padded grid, done as a product in
// the Fourier domain (the package's own mixed-radix FFT, radices 4, 3, 2, see fft1);
// subsampling by 2^k is done in the Fourier domain by averaging the 2^k×2^k
// aliased copies of the spectrum, which is exactly spatial subsampling; and
// the one-pixel border of the subsampled output, the part most touched by
// the padding, is cropped ((M'/2^J)−2 = 7 for 28). The filter bank is built
// once per image size (New) in the Fourier domain: ψ̂ and φ̂ are the real
// parts of the DFTs of spatial Gabor/Morlet filters periodised over 5×5
// copies of the grid, and the versions used at coarser resolutions are
// Kymatio's crops of the spectrum (frequencies above the new Nyquist
// zeroed, then folded).
//
// Speed: one 28×28 image takes 0.72–1.0 ms on one core (go test -bench
// Scatter -cpu 1, on a shared 2-core machine under load), and Features
// turned all 70 000 MNIST images into normalised features in 58 s with
// GOMAXPROCS=1 (0.83 ms each; issue 29 asks for < 60 s); more cores share
// the images (Features spreads them with internal/par). The features are
// float64 like every data.Dataset: 70 000 × 3969 of them take 2.2 GB.
// Three choices make it fast: a small FFT of the package's own whose loops
// run over whole rows or columns (fft1; gonum's fftpack took 3.9 ms per
// image, mostly in per-call overhead at these sizes); two real arrays per
// complex DFT (spectraOfPair); and the low pass done in space as two small
// products, since φ_J and its spectrum crops are separable (lowpass), which
// spares the moduli of the last scale their forward DFT and every channel
// an inverse one.
//
// CachedFeatures keeps the features on disk, one file per input, named
// by Key: a SHA-256 of the transform's configuration and every input
// value, so a changed image or setting is a miss, never a stale hit. The
// file holds float32 values (0.95 GB for MNIST's 60 000 training images),
// its key, shape and a trailing SHA-256 of its content, all checked on
// read; a file that fails is logged, recomputed and replaced, and files are
// written atomically (outfile.WriteFile). Fresh or cached, the values are
// rounded to float32, so a run does not depend on whether the cache hit.
// Features32 and CachedFeatures32 hold them in float32 only (the dataset's
// X32), half the memory, for a trainer that reads float32 (dpal train).
//
// Differences from Kymatio, all below 1e-4 relative: the Gaussians are
// normalised by 2πσ² with π to full precision (Kymatio writes 3.1415), so
// φ̂(0) = 1 to rounding; the filters are built in float64 (Kymatio builds
// the Gabor filters in complex64 with float32 rotations); everything is
// float64. Checked against Kymatio's source (filter_bank.py, utils.py,
// core/scattering2d.py, numpy backend's Pad and unpad), not against its
// outputs: numpy and Kymatio could not be installed here.
package scatter
