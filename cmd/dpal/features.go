package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/dpal-dev/dpal/data"
	"github.com/dpal-dev/dpal/model/nn"
	"github.com/dpal-dev/dpal/model/scatter"
)

// The --features values.
const (
	featuresRaw     = "raw"
	featuresScatter = "scatter"
)

// featureFlags declares --features and --cache-dir, bound to o (train,
// pool run).
func featureFlags(f *pflag.FlagSet, o *presetOptions) {
	f.StringVar(&o.Features, "features", featuresRaw, "raw|scatter: train on the pixels, or on Tramèr & Boneh's ScatterNet features (mnist, fashion-mnist; public transform, no privacy cost)")
	f.StringVar(&o.CacheDir, "cache-dir", "", "--features scatter: cache the features here, keyed by a hash of the images and the transform (default: the user cache dir's dpal/scatter; none: no cache)")
}

// featureInfo is what the output and the model file record of the
// features a run trained on.
type featureInfo struct {
	Features string          `json:"features,omitempty"`
	Scatter  *scatter.Config `json:"scatter,omitempty"`
}

// checkFeatures refuses a --features value that is not known, or scatter
// on data that are not 28×28 images.
func checkFeatures(features, name string) error {
	switch features {
	case featuresRaw:
		return nil
	case featuresScatter:
		if name != "mnist" && name != "fashion-mnist" {
			return fmt.Errorf("--features scatter needs --data mnist or fashion-mnist, not %q", name)
		}
		return nil
	}
	return fmt.Errorf("--features %q: want raw or scatter", features)
}

// applyFeatures returns the datasets a run trains and tests on: train and
// test themselves for raw features, their ScatterNet features
// (scatter.MNIST's configuration, through the on-disk cache) for scatter,
// which have no image shape for the CNN. With f32 they hold their rows in
// float32 only (data.Dataset.X32), the form the DP-SGD trainer and
// nn.Net's float32 methods read, so that the rows are held once.
func (o *presetOptions) applyFeatures(train, test *data.Dataset, image [3]int, f32 bool) (*data.Dataset, *data.Dataset, [3]int, featureInfo, error) {
	info := featureInfo{Features: o.Features}
	if o.Features != featuresScatter {
		if f32 {
			train.Float32()
			test.Float32()
		}
		return train, test, image, info, nil
	}
	c := scatter.MNIST
	if image != [3]int{c.Height, c.Width, 1} {
		return nil, nil, image, info, fmt.Errorf("--features scatter: images are %v, want 28×28×1", image)
	}
	info.Scatter = &c
	dir := scatterCacheDir(o.CacheDir)
	get := cachedFeatures
	if f32 {
		get = cachedFeatures32
	}
	tr, err := get(train, c, dir)
	if err != nil {
		return nil, nil, image, info, err
	}
	te, err := get(test, c, dir)
	if err != nil {
		return nil, nil, image, info, err
	}
	return tr, te, [3]int{}, info, nil
}

// cachedFeatures is scatter.CachedFeatures, logged with its time.
func cachedFeatures(d *data.Dataset, c scatter.Config, dir string) (*data.Dataset, error) {
	return logFeatures(scatter.CachedFeatures, d, c, dir)
}

// cachedFeatures32 is scatter.CachedFeatures32, logged with its time.
func cachedFeatures32(d *data.Dataset, c scatter.Config, dir string) (*data.Dataset, error) {
	return logFeatures(scatter.CachedFeatures32, d, c, dir)
}

// logFeatures is get (scatter.CachedFeatures or CachedFeatures32) logged
// with its time.
func logFeatures(get func(*data.Dataset, scatter.Config, string) (*data.Dataset, scatter.CacheStatus, error),
	d *data.Dataset, c scatter.Config, dir string) (*data.Dataset, error) {
	start := time.Now()
	f, status, err := get(d, c, dir)
	if err != nil {
		return nil, fmt.Errorf("--features scatter: %w", err)
	}
	slog.Debug("scatter features", "data", d.Name, "rows", d.Len(), "cache", status, "seconds", time.Since(start).Seconds())
	return f, nil
}

// scatterCacheDir resolves --cache-dir: empty is the user cache
// directory's dpal/scatter (no cache when there is none), "none" no cache.
func scatterCacheDir(flag string) string {
	switch flag {
	case "none":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			slog.Warn("--features scatter: no user cache directory, features are not cached", "err", err)
			return ""
		}
		return filepath.Join(base, "dpal", "scatter")
	}
	return flag
}

// recorded is f as outputs record it: nothing for raw features (so that
// the outputs of runs without --features do not change), else f.
func (f featureInfo) recorded() featureInfo {
	if f.Features == featuresRaw {
		return featureInfo{}
	}
	return f
}

// modelFeatures is test as the model whose meta this is takes it: its
// ScatterNet features when the model file records --features scatter
// (with the configuration it records), else test itself.
func modelFeatures(meta nn.Meta, test *data.Dataset) (*data.Dataset, error) {
	var info featureInfo
	if len(meta.Privacy) > 0 {
		if err := json.Unmarshal(meta.Privacy, &info); err != nil {
			return nil, fmt.Errorf("privacy record: %w", err)
		}
	}
	switch info.Features {
	case "", featuresRaw:
		return test, nil
	case featuresScatter:
		if info.Scatter == nil {
			return nil, errors.New("features scatter without their configuration")
		}
		return cachedFeatures(test, *info.Scatter, scatterCacheDir(""))
	}
	return nil, fmt.Errorf("features %q: want raw or scatter", info.Features)
}
