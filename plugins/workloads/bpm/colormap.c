/* A perceptual colormap for the intensity images: inferno (matplotlib's,
 * perceptually uniform, dark background), as Matt Zucker's degree-6
 * polynomial fit (shadertoy WlfXRN, CC0) rather than a 256-entry table. */
#include "bpm.h"

void bpm_colormap(double t, unsigned char rgb[3]) {
  static const double c[7][3] = {
      {0.0002189403691192265, 0.001651004631001012, -0.01948089843709184},
      {0.1065134194856116, 0.5639564367884091, 3.932712388889277},
      {11.60249308247187, -3.972853965665698, -15.9423941062914},
      {-41.70399613139459, 17.43639888205313, 44.35414519872813},
      {77.162935699427, -33.40235894210092, -81.80730925738993},
      {-71.31942824499214, 32.62606426397723, 73.20951985803202},
      {25.13112622477341, -12.24266895238567, -23.07032500287172},
  };
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  for (int k = 0; k < 3; k++) {
    double v = c[6][k];
    for (int i = 5; i >= 0; i--) v = v * t + c[i][k];
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    rgb[k] = (unsigned char)(v * 255 + 0.5);
  }
}
